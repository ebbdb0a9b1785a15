import { chaosProfile } from './profile.ts';
import { registerReliabilitySuite } from './suite.ts';

// The reliability suite's quick profile, part of `npm test` (CI); `npm run test:chaos` runs the full one.
await registerReliabilitySuite(chaosProfile('quick'));
