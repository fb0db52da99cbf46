import { pino, type Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.js';
import { espeakAvailable } from './providers/tts/espeak.js';
import { buildServices, type Services } from './services.js';
import { lockDataDir } from './store/data-dir-lock.js';
import { currentTraceId, startTracing } from './observability/tracing.js';
import { buildApp, REDACT } from './app.js';
import { preloadBackgroundTracks } from './media/background.js';
import { sharedSileroModel } from './media/vad-silero.js';
import { errorMessage } from './domain/records.js';

/** Makes sure an account exists: the one of OPENLINE_API_KEY, or a first one whose key is printed once. */
async function bootstrapAccount(config: Config, services: Services, log: Logger): Promise<void> {
  if (config.apiKey) {
    const { created } = await services.accounts.ensureKey(config.apiKey);
    if (created) log.info('created the account of OPENLINE_API_KEY');
    return;
  }
  if ((await services.accounts.count()) === 0) {
    const { key } = await services.accounts.create('default');
    // Printed once, on purpose, to stdout and not into the structured log.
    process.stdout.write(
      `\nCreated the first Openline account. Its API key (shown only this once):\n\n  ${key}\n\n` +
        `Use it as the authorization header. More keys: npx openline keys create\n\n`,
    );
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  // Audio without its voice would "complete" calls in a second with nothing said: stop here instead.
  const needsVoice = config.sandboxAudio
    ? 'the sandbox audio mode (OPENLINE_SANDBOX_AUDIO) needs'
    : config.twilio !== undefined
      ? 'Twilio calls need'
      : config.sip.trunk !== undefined
        ? 'calls through the SIP trunk (OPENLINE_SIP_TRUNK) need'
        : undefined;
  if (config.speech.tts === 'espeak' && needsVoice && !espeakAvailable()) {
    process.stderr.write(
      `espeak-ng is not installed, and ${needsVoice} it for the ` +
        'local voice (OPENLINE_TTS=espeak). Install the package espeak-ng (Debian/Ubuntu: apt-get install espeak-ng), ' +
        'or choose another voice with OPENLINE_TTS=openai or elevenlabs.\n',
    );
    process.exit(1);
  }
  const tracing = await startTracing();
  // Log lines written inside a traced call carry its trace id.
  const log = pino({
    level: config.logLevel,
    redact: REDACT,
    mixin: () => {
      const traceId = currentTraceId();
      return traceId ? { trace_id: traceId } : {};
    },
  });
  const unlock = config.databaseUrl || config.dataDir === ':memory:' ? () => undefined : lockDataDir(config.dataDir);
  process.on('exit', unlock);
  const services = await buildServices(config, { logger: log });
  services.metrics.enableProcessMetrics();
  // What audio calls share is made before the first call, not during it: generating the
  // background tracks holds the event loop for about 0.2 s, and frames of a call that waits for
  // the Silero model to load queue up behind it. A model that cannot load is reported (once) when
  // a call first asks for it, and that call uses the energy VAD.
  preloadBackgroundTracks();
  sharedSileroModel().catch(() => undefined);
  await bootstrapAccount(config, services, log);
  const app = await buildApp(services, { logger: log });
  if (config.workers) await services.startWorkers();
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  log.info({ base_url: `http://${shownHost}:${port}/v1`, docs: `http://${shownHost}:${port}/docs` }, 'Openline ready');

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal, drain_s: config.drainSeconds }, 'shutting down: draining live calls');
    // The HTTP server stays up while calls drain (their media websockets, /readyz answering 503).
    const { cut } = await services.drain(config.drainSeconds * 1000);
    log.info({ cut }, 'drained');
    await app.close();
    await services.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`Openline failed to start: ${errorMessage(error)}\n`);
  process.exit(1);
});
