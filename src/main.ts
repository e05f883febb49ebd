// `npm start`: read the configuration, start the service, stop gracefully on SIGTERM or SIGINT.
import { ConfigError, loadConfig } from './config.ts';
import { startService } from './server.ts';

try {
  const service = await startService(loadConfig(process.env));
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal} received: finishing requests in flight (up to 10 s)\n`);
    service.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
