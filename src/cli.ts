import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './platform/config.ts';
import { createService, type Service } from './service.ts';
import { createLogger } from './platform/logger.ts';
import { openDatabase } from './platform/db/connect.ts';
import { migrateToLatest } from './platform/db/migrate.ts';
import { allMigrations } from './features.ts';
import { createUser } from './accounts/users.ts';
import { grantCreditsFromCli } from './billing/cli.ts';
import { syncModels } from './models/sync.ts';
import { registerClient } from './oauth/clients.ts';

/**
 * The operator CLI. Each command builds the service without listening and calls the same code the
 * operator API calls, so the CLI and the API cannot drift apart.
 */
type Command = { usage: string; options?: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>; run(values: Record<string, any>): Promise<void> };

async function withService<T>(fn: (service: Service) => Promise<T>): Promise<T> {
  // Logs of one-shot commands go to stderr, so their stdout is only the answer (`ADMIN=$(tollgate admin-token)`).
  const service = await createService({ timers: false, config: loadConfig(process.env, { LOG_LEVEL: 'warn' }), log: createLogger('warn', process.stderr) });
  try {
    return await fn(service);
  } finally {
    await service.close();
  }
}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new Error(`--${name} is required`);
  return value;
}

export const commands: Record<string, Command> = {
  serve: {
    usage: 'serve                         run the HTTP service (migrations applied at start)',
    async run() {
      const service = await createService();
      const url = await service.listen();
      service.ctx.log.info({ url }, `Tollgate listening on ${url}`);
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        service.ctx.log.info({ signal }, 'shutting down');
        await service.close();
        process.exit(0);
      };
      process.on('SIGTERM', () => void stop('SIGTERM'));
      process.on('SIGINT', () => void stop('SIGINT'));
    },
  },
  migrate: {
    usage: 'migrate                       apply pending database migrations',
    async run() {
      const config = loadConfig();
      const database = openDatabase(config);
      try {
        const result = await migrateToLatest(database.db, allMigrations(), config);
        const applied = (result.results ?? []).map((r) => r.migrationName);
        console.log(applied.length ? `applied: ${applied.join(', ')}` : 'the schema is up to date');
      } finally {
        await database.close();
      }
    },
  },
  'create-user': {
    usage: 'create-user --email E --password P [--name N]',
    options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } },
    async run(values) {
      const user = await withService((s) => createUser(s.ctx.db, s.ctx.clock, { email: required(values, 'email'), password: required(values, 'password'), name: values.name }));
      console.log(JSON.stringify(user, null, 2));
    },
  },
  'sync-models': {
    usage: "sync-models                   import the configured providers' models and USD prices into the catalogue",
    async run() {
      const report = await withService((s) => syncModels(s.ctx));
      console.log(JSON.stringify(report, null, 2));
    },
  },
  'grant-credits': {
    usage: 'grant-credits (--user ID | --email E) --amount CREDITS [--reason R]   give credits (--amount=-N takes them back)',
    options: { user: { type: 'string' }, email: { type: 'string' }, amount: { type: 'string' }, reason: { type: 'string' } },
    async run(values) {
      console.log(JSON.stringify(await withService((s) => grantCreditsFromCli(s.ctx, values))));
    },
  },
  'create-app': {
    usage: 'create-app --name N --redirect-uri URI [--redirect-uri URI…] [--scope S…] [--confidential]   register an OAuth app',
    options: { name: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, scope: { type: 'string', multiple: true }, confidential: { type: 'boolean' } },
    async run(values) {
      const app = await withService((s) =>
        registerClient(s.ctx.db, s.ctx.clock, {
          name: required(values, 'name'),
          redirectUris: values['redirect-uri'] ?? [],
          scopes: values.scope ?? ['read', 'billing:read', 'ai:chat', 'ai:models', 'offline_access'],
          type: values.confidential ? 'confidential' : 'public',
        }, null),
      );
      console.log(JSON.stringify(app, null, 2));
    },
  },
  'admin-token': {
    usage: 'admin-token                   print the operator token (generated on first start when not configured)',
    async run() {
      const tokens = await withService(async (s) => s.ctx.secrets.adminTokens);
      console.log(tokens[0]);
    },
  },
};

async function main(argv: string[]): Promise<void> {
  const [name = 'serve', ...rest] = argv;
  const command = commands[name];
  if (!command) {
    console.error(`Usage: tollgate <command>\n\n${Object.values(commands).map((c) => `  ${c.usage}`).join('\n')}`);
    process.exit(name === 'help' || name === '--help' ? 0 : 2);
  }
  const { values } = parseArgs({ args: rest, options: command.options ?? {}, strict: true });
  await command.run(values);
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((error) => {
    console.error(error instanceof ConfigError ? error.message : `tollgate: ${error.message ?? error}`);
    process.exit(1);
  });
}
