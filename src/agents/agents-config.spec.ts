import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config/config';
import { envKey, loadAgentsConfig, toolMatcher } from './agents-config';

function file(content: string, name = 'agents.json'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'agents-config-')), name);
  writeFileSync(path, content);
  return path;
}

const known = { agents: ['a', 'b', 'c'], tools: ['calculate', 'current_time'] };
const load = (content: string, env: Record<string, string> = {}, name?: string) =>
  loadAgentsConfig(known, file(content, name), env);

describe('the agents file (AGENTS_CONFIG)', () => {
  it('names environment variables after the agent id', () => {
    expect(envKey('assistant', 'MODEL')).toBe('AGENT_ASSISTANT_MODEL');
    expect(envKey('my-agent.v2', 'INSTRUCTIONS')).toBe('AGENT_MY_AGENT_V2_INSTRUCTIONS');
  });

  it('merges the file and the environment, the environment winning', () => {
    const path = file(
      JSON.stringify({ a: { model: 'openai/gpt-4o-mini', instructions: 'file' }, b: { instructions: 'b' } }),
    );
    const out = loadAgentsConfig(known, path, { AGENT_A_INSTRUCTIONS: 'env' }).agents;
    expect(out.get('a')).toEqual({ model: 'openai/gpt-4o-mini', instructions: 'env' });
    expect(out.get('b')).toEqual({ instructions: 'b' });
    expect(out.has('c')).toBe(false);
  });

  it('reads whole agents and their MCP servers, in YAML, with ${VAR} from the environment', () => {
    const yaml = [
      'mcpServers:',
      '  files:',
      '    command: /usr/bin/node',
      '    args: [server.js, /srv]',
      '    env: { TOKEN: "${FILES_TOKEN}" }',
      '    tools: [read_*]',
      '  crm:',
      '    url: http://crm.internal/mcp',
      '    headers: { X-Api-Key: "${CRM_KEY}" }',
      '    forwardAuth: bearer',
      '    requireApproval: [delete_*]',
      '    prefix: ""',
      'agents:',
      '  reader:',
      '    instructions: Read files.',
      '    maxSteps: 4',
      '    memory: { lastMessages: 8 }',
      '    tools: [current_time]',
      '    mcpServers: [files, crm]',
    ].join('\n');
    const out = load(yaml, { FILES_TOKEN: 't1', CRM_KEY: 'k1' }, 'agents.yaml');
    expect(out.agents.get('reader')).toEqual({
      instructions: 'Read files.',
      maxSteps: 4,
      memory: { lastMessages: 8 },
      tools: ['current_time'],
      mcpServers: ['files', 'crm'],
    });
    expect(out.mcpServers.get('files')).toEqual({
      transport: 'stdio',
      command: '/usr/bin/node',
      args: ['server.js', '/srv'],
      env: { TOKEN: 't1' },
      tools: ['read_*'],
    });
    expect(out.mcpServers.get('crm')).toEqual({
      transport: 'http',
      url: 'http://crm.internal/mcp',
      headers: { 'X-Api-Key': 'k1' },
      forwardAuth: 'bearer',
      requireApproval: ['delete_*'],
      prefix: '',
    });
  });

  it.each([
    ['not JSON', '{', /agents.json: cannot read it/],
    [
      'a new agent without instructions',
      '{"zzz":{}}',
      /agent 'zzz', field 'instructions': required for a new agent/,
    ],
    ['an unknown field', '{"a":{"temperature":1}}', /agent 'a', field '\(the entry\)'.*temperature/],
    ['a bad model id', '{"a":{"model":"Not A Model"}}', /agent 'a', field 'model'/],
    ['an unknown server tool', '{"a":{"tools":["rm"]}}', /agent 'a', field 'tools.0': no server tool 'rm'/],
    [
      'an unknown MCP server',
      '{"agents":{"a":{"mcpServers":["fs"]}}}',
      /agent 'a', field 'mcpServers.0': no MCP server 'fs'/,
    ],
    ['a server without a transport', '{"mcpServers":{"fs":{"args":[]}}}', /MCP server 'fs': needs 'command'/],
    [
      'a server URL that is not http',
      '{"mcpServers":{"fs":{"url":"ftp://x"}}}',
      /MCP server 'fs', field 'url'/,
    ],
    [
      'a variable that is not set',
      '{"mcpServers":{"fs":{"url":"http://x","headers":{"K":"${NOPE}"}}}}',
      /MCP server 'fs', field 'headers.K': names \$\{NOPE\}, which is not set/,
    ],
    ['an unknown section', '{"agents":{},"servers":{}}', /unknown section 'servers'/],
  ])(
    'refuses a file with %s, naming the file, the agent or server and the field',
    (_name, content, message) => {
      expect(() => load(content)).toThrow(ConfigError);
      expect(() => load(content)).toThrow(message);
      expect(() => load(content)).toThrow(/AGENTS_CONFIG \/.*agents\.json/);
    },
  );

  it("takes an agent's context window from the file, and refuses one too small to hold a prompt", () => {
    expect(load('{"a": {"contextTokens": 16000}}').agents.get('a')).toEqual({ contextTokens: 16000 });
    expect(() => load('{"a": {"contextTokens": 10}}')).toThrow(/contextTokens/);
  });

  it('refuses a bad model id from the environment, naming the variable', () => {
    expect(() => loadAgentsConfig(known, undefined, { AGENT_A_MODEL: 'nope' })).toThrow(/AGENT_A_MODEL/);
    expect(() => loadAgentsConfig(known, undefined, { AGENT_Z_MODEL: 'scripted' })).toThrow(
      /AGENT_Z_MODEL: names no agent/,
    );
  });

  it('refuses a missing file', () => {
    expect(() => loadAgentsConfig(known, '/nonexistent/agents.json', {})).toThrow(/cannot read/);
  });

  it('matches tool names and patterns', () => {
    const allowed = toolMatcher(['read_*', 'list.dir']);
    expect(['read_file', 'read_', 'list.dir'].every(allowed)).toBe(true);
    expect(['write_file', 'listxdir', 'xread_file'].some(allowed)).toBe(false);
  });
});
