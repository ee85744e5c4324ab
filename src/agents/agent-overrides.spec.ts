import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config';
import { envKey, loadOverrides } from './agent-overrides';

function file(content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'overrides-')), 'agents.json');
  writeFileSync(path, content);
  return path;
}

describe('agent overrides', () => {
  it('names environment variables after the agent id', () => {
    expect(envKey('assistant', 'MODEL')).toBe('AGENT_ASSISTANT_MODEL');
    expect(envKey('my-agent.v2', 'INSTRUCTIONS')).toBe('AGENT_MY_AGENT_V2_INSTRUCTIONS');
  });

  it('merges the file and the environment, the environment winning', () => {
    const path = file(
      JSON.stringify({ a: { model: 'openai/gpt-4o-mini', instructions: 'file' }, b: { instructions: 'b' } }),
    );
    const out = loadOverrides(['a', 'b', 'c'], path, { AGENT_A_INSTRUCTIONS: 'env' });
    expect(out.get('a')).toEqual({ model: 'openai/gpt-4o-mini', instructions: 'env' });
    expect(out.get('b')).toEqual({ instructions: 'b' });
    expect(out.get('c')).toEqual({});
  });

  it.each([
    ['not JSON', '{', /cannot read/],
    ['an unknown agent', '{"zzz":{}}', /unknown agent\(s\) zzz/],
    ['an unknown field', '{"a":{"temperature":1}}', /AGENTS_CONFIG a/],
    ['a bad model id', '{"a":{"model":"Not A Model"}}', /AGENTS_CONFIG a.model/],
  ])('refuses a file with %s', (_name, content, message) => {
    expect(() => loadOverrides(['a'], file(content), {})).toThrow(ConfigError);
    expect(() => loadOverrides(['a'], file(content), {})).toThrow(message);
  });

  it("takes an agent's context window from the file, and refuses one too small to hold a prompt", () => {
    expect(loadOverrides(['a'], file('{"a": {"contextTokens": 16000}}'), {}).get('a')).toEqual({
      contextTokens: 16000,
    });
    expect(() => loadOverrides(['a'], file('{"a": {"contextTokens": 10}}'), {})).toThrow(/contextTokens/);
  });

  it('refuses a bad model id from the environment, naming the variable', () => {
    expect(() => loadOverrides(['a'], undefined, { AGENT_A_MODEL: 'nope' })).toThrow(/AGENT_A_MODEL/);
  });

  it('refuses a missing file', () => {
    expect(() => loadOverrides(['a'], '/nonexistent/agents.json', {})).toThrow(/cannot read/);
  });
});
