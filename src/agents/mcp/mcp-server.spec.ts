import { firstLine } from './mcp-server';

describe("an MCP server's error as GET /agents shows it", () => {
  it('keeps the first line, without a URL query or credentials', () => {
    const err = new Error(
      'Failed to connect to https://bot:s3cret@crm.example.com/mcp?api_key=k-123 (fetch failed)\n    at stack',
    );
    expect(firstLine(err)).toBe('Failed to connect to https://crm.example.com/mcp?… (fetch failed)');
  });
});
