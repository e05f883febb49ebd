// `npm run provider:check`: asks the configured model provider one short chat question and for one campaign as JSON,
// both streamed exactly as the service does, and prints what a self-hoster needs to know: does it answer, how fast,
// does it reason, does JSON mode work, and which settings to raise. Exit code 0 only when generation would work.
import { campaignPrompt } from '../src/campaigns/brief.ts';
import { CAMPAIGN_REPLY_SCHEMA, readCampaignReply } from '../src/campaigns/reply.ts';
import { ConfigError, loadConfig, type Config } from '../src/config.ts';
import { probeProvider, type ProbeResult } from '../src/llm/provider-check.ts';

const CHAT = {
  system: 'You are a marketing analyst. Answer in one short sentence.',
  messages: [{ role: 'user' as const, content: 'Say hello to the marketing team in one short sentence.' }],
};

const prompt = campaignPrompt({
  audience: 'customers in Germany who spent more than 500',
  audienceSize: 1240,
  objective: 'Invite our best customers to the winter sale with early access.',
  channel: 'sms',
  tone: 'friendly',
});
const JSON_REQUEST = {
  system: prompt.system,
  messages: [{ role: 'user' as const, content: prompt.user }],
  json: { name: 'campaign', schema: CAMPAIGN_REPLY_SCHEMA },
};

type JsonVerdict = 'yes' | 'repaired' | 'no';

/** Whether the JSON reply was the object as asked, needed the service's repair, or is unusable. */
function jsonVerdict(result: ProbeResult): JsonVerdict {
  if (result.finish !== 'stop') return 'no';
  try {
    const parsed = JSON.parse(result.text) as Record<string, unknown>;
    if (['title', 'message', 'callToAction'].every((key) => typeof parsed[key] === 'string' && parsed[key])) return 'yes';
  } catch {
    // not the bare object: the repair may still find it
  }
  return readCampaignReply(result.text).ok ? 'repaired' : 'no';
}

const ms = (value: number | undefined) => (value === undefined ? '-' : `${value.toLocaleString('en-US')} ms`);
const yesNo = (value: boolean | undefined) => (value === undefined ? '-' : value ? 'yes' : 'no');
const ceilTo = (value: number, step: number) => Math.ceil(value / step) * step;

/** Settings to change, each with the reason, from what the two probes saw. */
function suggestions(llm: Config['llm'], results: ProbeResult[], json: JsonVerdict): string[] {
  const advice: string[] = [];
  const cut = results.find((r) => r.finish === 'length');
  if (cut) {
    const spentReasoning = cut.reasoned && !cut.text.trim();
    const tokens = Math.min(131_072, Math.max(spentReasoning ? 8192 : 4096, llm.maxTokens * 4));
    advice.push(
      `LLM_MAX_TOKENS=${tokens}  (the reply was cut at ${llm.maxTokens} tokens${spentReasoning ? ', all of them spent reasoning' : cut.reasoned ? ', part of them spent reasoning' : ''})`,
    );
  }
  const silence = Math.max(...results.map((r) => r.longestSilenceMs));
  const timedOut = results.some((r) => r.error?.includes('LLM_TIMEOUT_MS'));
  if (timedOut || silence > llm.timeoutMs / 2) {
    const timeout = Math.min(600_000, timedOut ? Math.max(llm.timeoutMs * 3, ceilTo(silence * 2, 1000)) : ceilTo(silence * 2, 1000));
    advice.push(`LLM_TIMEOUT_MS=${timeout}  (${timedOut ? 'an attempt fell silent for the whole timeout' : `the server fell silent for ${ms(silence)}`}; the default is ${llm.timeoutMs})`);
  }
  if (json === 'no' && llm.provider === 'openai' && llm.jsonMode === 'json_schema' && results[1]?.finish !== 'length') {
    advice.push('LLM_JSON_MODE=json_object  (the server did not answer the strict JSON schema request with a usable object; try json_object, then none)');
  }
  return advice;
}

function table(rows: [string, string, string][]): string {
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('   ').trimEnd()).join('\n');
}

async function main(): Promise<number> {
  let config: Config;
  try {
    // The check touches no database, so it must not create the token secret beside one either.
    config = loadConfig({ ...process.env, DATABASE_PATH: ':memory:' });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const llm = config.llm;
  if (llm.provider === 'local') {
    process.stdout.write('LLM_PROVIDER is local: the built-in generator writes everything, so there is no provider to check.\nSet LLM_BASE_URL and LLM_MODEL (and LLM_PROVIDER=anthropic for Claude) to check one.\n');
    return 0;
  }

  process.stdout.write(`Checking ${llm.provider} at ${llm.baseUrl} with model ${llm.model} (LLM_MAX_TOKENS ${llm.maxTokens}, LLM_TIMEOUT_MS ${llm.timeoutMs})...\n\n`);
  const chat = await probeProvider(llm, CHAT);
  const json = await probeProvider(llm, JSON_REQUEST);
  const verdict = jsonVerdict(json);
  const works = chat.finish === 'stop' && verdict !== 'no';

  const row = (label: string, show: (r: ProbeResult) => string): [string, string, string] => [label, show(chat), show(json)];
  process.stdout.write(
    `${table([
      ['', 'chat', 'json (campaign)'],
      row('reachable', (r) => yesNo(r.reachable)),
      row('model', (r) => r.servedBy ?? (r.reachable ? `${llm.model} (not named by the server)` : '-')),
      row('first byte', (r) => ms(r.firstByteMs)),
      row('first content', (r) => ms(r.firstContentMs)),
      row('whole reply', (r) => ms(r.totalMs)),
      row('longest silence', (r) => ms(r.longestSilenceMs)),
      row('streaming', (r) => (r.streamed === undefined ? '-' : r.streamed ? 'yes' : 'no (answered whole; works, without progress)')),
      row('reasons', (r) => yesNo(r.finish === undefined && !r.reasoned ? undefined : r.reasoned)),
      row('finish', (r) => r.finish ?? 'none'),
      ['json mode', '-', verdict === 'yes' ? `yes (${llm.provider === 'openai' ? llm.jsonMode : 'forced tool'})` : verdict === 'repaired' ? 'repaired by the service' : 'no'],
      row('result', (r) => (r.error ? 'failed' : r.finish === 'stop' ? 'ok' : r.finish ?? 'failed')),
    ])}\n`,
  );
  for (const [name, r] of [['chat', chat], ['json', json]] as const) {
    if (r.error) process.stdout.write(`\n${name}: ${r.error}\n`);
  }

  const advice = suggestions(llm, [chat, json], verdict);
  if (advice.length > 0) process.stdout.write(`\nSuggested settings:\n${advice.map((line) => `  ${line}`).join('\n')}\n`);
  process.stdout.write(works ? '\nGeneration works with this provider.\n' : '\nGeneration would NOT work with these settings.\n');
  return works ? 0 : 1;
}

process.exitCode = await main();
