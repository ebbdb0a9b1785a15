import { chaosProfile } from './profile.ts';
import { registerReliabilitySuite } from './suite.ts';

// The reliability suite's full profile (`npm run test:chaos`): 20 kills per database and more of everything.
await registerReliabilitySuite(chaosProfile('full'));
