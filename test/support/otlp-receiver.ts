import { createServer, Server } from 'node:http';

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number; message?: string };
  events?: Array<{ name: string; attributes?: Array<{ key: string; value: OtlpValue }> }>;
};
export type Span = Omit<OtlpSpan, 'attributes'> & { attributes: Record<string, unknown>; service: unknown };

const flat = (attributes: OtlpSpan['attributes'] = []) =>
  Object.fromEntries(
    attributes.map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? Number(value.intValue)]),
  );

/** A local OTLP/HTTP receiver: collects the spans POSTed (JSON) to /v1/traces. */
export async function startReceiver(): Promise<{
  endpoint: string;
  spans: Span[];
  close: () => Promise<void>;
}> {
  const spans: Span[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      const payload = JSON.parse(body) as {
        resourceSpans: Array<{
          resource: { attributes: OtlpSpan['attributes'] };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      for (const rs of payload.resourceSpans) {
        const service = flat(rs.resource.attributes)['service.name'];
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) spans.push({ ...s, attributes: flat(s.attributes), service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
