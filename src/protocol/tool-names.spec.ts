import { modelToolName, ToolAliases } from './tool-names';

describe('tool names for the model', () => {
  it('keeps names every provider takes', () => {
    expect(modelToolName('get_weather')).toBe('get_weather');
    expect(modelToolName('a-b_C9')).toBe('a-b_C9');
  });

  it('aliases MCP-style names, keeping apart names that differ only in punctuation', () => {
    const dotted = modelToolName('portal.get_positions');
    expect(dotted).toMatch(/^portal_get_positions_[0-9a-f]{6}$/);
    expect(modelToolName('portal/get_positions')).not.toBe(dotted);
    expect(modelToolName('x'.repeat(128) + '.y')).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it('restores what the model calls, and aliases names met in the conversation', () => {
    const aliases = new ToolAliases();
    expect(aliases.empty).toBe(true);
    const alias = aliases.add('files/read');
    expect(aliases.add('plain')).toBe('plain');
    expect(aliases.empty).toBe(false);
    expect(aliases.client(alias)).toBe('files/read');
    expect(aliases.client('plain')).toBe('plain');
    expect(aliases.model('files/read')).toBe(alias);
    expect(new ToolAliases().model('files/read')).toBe(alias);
  });
});
