// `npm start`: read the configuration, start the service, stop gracefully on SIGTERM or SIGINT.
import { ConfigError, loadConfig } from './config.ts';
import { startService, type RunningService } from './server.ts';

let service: RunningService | undefined;
let stopping = false;

function stop(running: RunningService, signal: string): void {
  process.stderr.write(`${signal} received: finishing requests in flight (up to 10 s)\n`);
  running.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}

// Installed before start-up, so a signal that arrives while the service is starting still stops it gracefully.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    if (service) stop(service, signal);
  });
}

try {
  service = await startService(loadConfig(process.env));
  if (stopping) stop(service, 'a signal during start-up');
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}
