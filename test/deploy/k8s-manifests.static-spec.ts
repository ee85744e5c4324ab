/**
 * The container image and the Kubernetes deployment, checked without Docker or a cluster:
 * 1. every object in every YAML file under deploy/k8s against the Kubernetes JSON schemas
 *    (kubernetes-models: types, required fields, formats such as quantities) and against the models'
 *    TypeScript types, which also reject unknown fields (the JSON schemas let them through, so
 *    `readOnlyRootFilesystem` on the pod instead of the container would pass unnoticed);
 * 2. the kustomization against the files of the base;
 * 3. the manifests against each other and against the app: probe paths, port, shutdown timing,
 *    selectors, image, security context; every rule is also shown to fail on a broken copy;
 * 4. the settings against the app's own parsers (loadConfig, loadOverrides);
 * 5. the Dockerfile and docker-compose.yml against the same facts.
 * With kubectl on the PATH, the output of `kubectl kustomize deploy/k8s/base` is checked as well.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative } from 'node:path';
import ts from 'typescript';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { mastra } from '../../src/mastra';
import { loadAgentsConfig } from '../../src/agents/agents-config';
import { loadConfig } from '../../src/config/config';

const ROOT = join(__dirname, '..', '..');
const K8S = join(ROOT, 'deploy', 'k8s');
const BASE = join(K8S, 'base');

/** What the app and the image promise; the manifests must agree with it. */
const APP = {
  livePath: '/health/live',
  readyPath: '/health/ready',
  portName: 'http',
  uid: 1000,
  gid: 1000,
  serverCommand: ['node', 'dist/src/main.js'],
  migrateCommand: ['node', 'dist/src/database/migrate.js'],
  /**
   * After SHUTDOWN_GRACE_MS the service gives unfinished runs up to 5 s to record RUN_ERROR
   * SHUTTING_DOWN (runs.stopAll), then closes the server and the pool: keep 10 s for that.
   */
  shutdownMarginMs: 10_000,
  /** OTLP/HTTP's default port: traces go there when the ConfigMap names no collector. */
  otlpPort: 4318,
  metricsPath: '/metrics',
  /** Postgres' default max_connections (100) less superuser_reserved_connections (3). */
  postgresConnections: 97,
  baseImage: 'node:24-bookworm-slim',
};

type Labels = Record<string, string>;
type Selector = {
  matchLabels?: Labels;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
};
type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Labels };
  [field: string]: any;
};
type Manifest = { file: string; doc: number; object: K8sObject };

const MODELS: Record<
  string,
  { model: new (data: any) => { validate(): void }; type: string; module: string }
> = {
  'v1/ConfigMap': { model: ConfigMap, type: 'IConfigMap', module: 'kubernetes-models/v1/ConfigMap' },
  'v1/Secret': { model: Secret, type: 'ISecret', module: 'kubernetes-models/v1/Secret' },
  'v1/Service': { model: Service, type: 'IService', module: 'kubernetes-models/v1/Service' },
  'apps/v1/Deployment': {
    model: Deployment,
    type: 'IDeployment',
    module: 'kubernetes-models/apps/v1/Deployment',
  },
  'batch/v1/Job': { model: Job, type: 'IJob', module: 'kubernetes-models/batch/v1/Job' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    model: HorizontalPodAutoscaler,
    type: 'IHorizontalPodAutoscaler',
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget,
    type: 'IPodDisruptionBudget',
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    model: NetworkPolicy,
    type: 'INetworkPolicy',
    module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
  },
  'monitoring.coreos.com/v1/PodMonitor': {
    model: PodMonitor,
    type: 'IPodMonitor',
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor',
  },
  'networking.k8s.io/v1/Ingress': {
    model: Ingress,
    type: 'IIngress',
    module: 'kubernetes-models/networking.k8s.io/v1/Ingress',
  },
};
/** kustomize's own file: no Kubernetes schema, checked by kustomizationProblems. */
const KUSTOMIZATION = 'kustomize.config.k8s.io/v1beta1/Kustomization';

const typeKey = (o: K8sObject) => `${o.apiVersion}/${o.kind}`;
const where = (m: Manifest) =>
  `${relative(ROOT, m.file)}[${m.doc}] ${m.object?.kind ?? '?'}/${m.object?.metadata?.name ?? '?'}`;

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
    )
    .sort();
}

function parseManifests(file: string, text = readFileSync(file, 'utf8')): Manifest[] {
  return parseAllDocuments(text).flatMap((doc, i) => {
    if (doc.errors.length) throw new Error(`${relative(ROOT, file)}[${i}]: ${doc.errors[0].message}`);
    const object = doc.toJS() as K8sObject | null;
    return object === null ? [] : [{ file, doc: i, object }];
  });
}

/** 1a. The Kubernetes JSON schemas (an unknown apiVersion/kind is a failure, not a skip). */
function schemaProblems(m: Manifest): string[] {
  const o = m.object;
  if (typeof o !== 'object' || !o.apiVersion || !o.kind) return [`${where(m)}: not a Kubernetes object`];
  if (typeKey(o) === KUSTOMIZATION) return [];
  const entry = MODELS[typeKey(o)];
  if (!entry) return [`${where(m)}: no schema for ${typeKey(o)} (unknown kind)`];
  if (!o.metadata?.name) return [`${where(m)}: metadata.name is missing`];
  try {
    new entry.model(o).validate();
    return [];
  } catch (err) {
    return [`${where(m)}: ${(err as Error).message}`];
  }
}

/** 1b. The models' TypeScript types: excess-property checks catch unknown and misplaced fields. */
function typeProblems(manifests: Manifest[]): string[] {
  const typed = manifests.filter((m) => MODELS[typeKey(m.object)]);
  const sources = new Map<string, { text: string; m: Manifest }>();
  typed.forEach((m, i) => {
    const { type, module } = MODELS[typeKey(m.object)];
    const text = `import type { ${type} } from '${module}';\nexport const m: ${type} = ${JSON.stringify(m.object, null, 2)};\n`;
    sources.set(join(ROOT, '.k8s-typecheck', `manifest${i}.ts`), { text, m });
  });
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Preserve,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
  };
  const base = ts.createCompilerHost(options);
  const host: ts.CompilerHost = {
    ...base,
    getSourceFile: (f, lang, ...rest) => {
      const own = sources.get(f);
      return own ? ts.createSourceFile(f, own.text, lang) : base.getSourceFile(f, lang, ...rest);
    },
    fileExists: (f) => sources.has(f) || base.fileExists(f),
    readFile: (f) => sources.get(f)?.text ?? base.readFile(f),
  };
  const program = ts.createProgram([...sources.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    const own = d.file && sources.get(d.file.fileName);
    if (!own || d.start === undefined) return `typecheck: ${message}`;
    const { line } = d.file!.getLineAndCharacterOfPosition(d.start);
    return `${where(own.m)}: ${message} (at ${own.text.split('\n')[line].trim()})`;
  });
}

/** 2. The kustomization lists exactly the base's manifests, which exist; examples stay out. */
function kustomizationProblems(k: K8sObject, dir: string, files: string[]): string[] {
  const problems: string[] = [];
  const allowed = new Set(['apiVersion', 'kind', 'resources', 'images', 'labels', 'patches', 'metadata']);
  for (const key of Object.keys(k))
    if (!allowed.has(key)) problems.push(`kustomization: unexpected field ${key}`);
  if ('namespace' in k) problems.push('kustomization: sets a namespace; the base is namespace-agnostic');
  const resources: unknown = k.resources;
  if (!Array.isArray(resources) || !resources.every((r) => typeof r === 'string')) {
    return [...problems, 'kustomization: resources must be a list of file names'];
  }
  const listed: string[] = resources;
  if (new Set(listed).size !== listed.length) problems.push('kustomization: a resource is listed twice');
  for (const r of listed) {
    if (!existsSync(join(dir, r))) problems.push(`kustomization: ${r} is listed but does not exist`);
    if (/\.example\.ya?ml$/.test(r))
      problems.push(`kustomization: ${r} is an example and must not be applied`);
  }
  const expected = files
    .map((f) => relative(dir, f).split('\\').join('/'))
    .filter((f) => !/^kustomization\.ya?ml$/.test(f) && !/\.example\.ya?ml$/.test(f));
  for (const f of expected) if (!listed.includes(f)) problems.push(`kustomization: ${f} is not listed`);
  return problems;
}

function matchesSelector(selector: Selector | undefined, labels: Labels = {}): boolean {
  if (!selector) return false;
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every((e) => {
    const has = e.key in labels;
    const inValues = has && (e.values ?? []).includes(labels[e.key]);
    return e.operator === 'In'
      ? inValues
      : e.operator === 'NotIn'
        ? !inValues
        : e.operator === 'Exists'
          ? has
          : e.operator === 'DoesNotExist'
            ? !has
            : false;
  });
  return byLabels && byExpressions;
}
const matchesMap = (selector: Labels | undefined, labels: Labels = {}) =>
  !!selector &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels[k] === v);

function preStopSleepSeconds(container: any): number | undefined {
  const preStop = container?.lifecycle?.preStop;
  if (typeof preStop?.sleep?.seconds === 'number') return preStop.sleep.seconds;
  const cmd: unknown = preStop?.exec?.command;
  if (Array.isArray(cmd) && cmd.length === 2 && /^(\/bin\/|\/usr\/bin\/)?sleep$/.test(String(cmd[0]))) {
    const s = Number(cmd[1]);
    return Number.isFinite(s) ? s : undefined;
  }
  return undefined;
}

/** The port traces leave on: the collector's in the ConfigMap, else OTLP/HTTP's default. */
function otlpPort(env: Labels): number {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return APP.otlpPort;
  const url = new URL(endpoint);
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
}

/** The example PodMonitor: the server pods only, their named port, the metrics path. */
function podMonitorProblems(monitor: K8sObject, deployment: K8sObject, job: K8sObject): string[] {
  const problems: string[] = [];
  const podLabels: Labels = deployment.spec?.template?.metadata?.labels ?? {};
  const jobLabels: Labels = job.spec?.template?.metadata?.labels ?? {};
  if (!matchesSelector(monitor.spec?.selector, podLabels))
    problems.push('PodMonitor: selector does not match the server pods');
  if (matchesSelector(monitor.spec?.selector, jobLabels))
    problems.push('PodMonitor: selector also matches the migration pods');
  const ports: string[] = (deployment.spec?.template?.spec?.containers ?? []).flatMap((c: any) =>
    (c.ports ?? []).map((x: any) => x.name),
  );
  const endpoints: any[] = monitor.spec?.podMetricsEndpoints ?? [];
  if (!endpoints.length) problems.push('PodMonitor: no podMetricsEndpoints');
  for (const e of endpoints) {
    if (!ports.includes(e.port)) problems.push(`PodMonitor: port ${e.port} is not a named container port`);
    if ((e.path ?? '/metrics') !== APP.metricsPath)
      problems.push(`PodMonitor: path ${e.path} is not /metrics`);
  }
  return problems;
}

function allowsPort(rules: any[] | undefined, port: number | string, protocol = 'TCP'): boolean {
  return (rules ?? []).some(
    (rule) =>
      !rule.ports ||
      rule.ports.some(
        (p: any) => (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port),
      ),
  );
}

/**
 * 3. Cross-checks of the base (plus the example Secret) with itself and with the app.
 * Returns one message per broken rule; empty when all hold.
 */
function consistencyProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  const p = (msg: string) => problems.push(msg);
  const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const only = (kind: string) => {
    const found = ofKind(kind);
    if (found.length !== 1) p(`expected exactly one ${kind}, found ${found.length}`);
    return found[0] as K8sObject | undefined;
  };
  const deployment = only('Deployment');
  const job = only('Job');
  const service = only('Service');
  const hpa = only('HorizontalPodAutoscaler');
  const pdb = only('PodDisruptionBudget');
  const secret = only('Secret');
  if (!deployment || !job || !service || !hpa || !pdb || !secret) return problems;

  for (const o of objects) {
    const id = `${o.kind}/${o.metadata.name}`;
    if (o.metadata.namespace) p(`${id}: sets metadata.namespace; the base is namespace-agnostic`);
    if (o.metadata.labels?.['app.kubernetes.io/name'] !== 'io-bridge') {
      p(`${id}: label app.kubernetes.io/name must be io-bridge`);
    }
    if (o.metadata.labels?.['app.kubernetes.io/part-of'] !== 'io-bridge') {
      p(`${id}: label app.kubernetes.io/part-of must be io-bridge`);
    }
  }

  // The server's pods.
  const pod = deployment.spec?.template ?? {};
  const podLabels: Labels = pod.metadata?.labels ?? {};
  const jobPodLabels: Labels = job.spec?.template?.metadata?.labels ?? {};
  if (!matchesSelector(deployment.spec?.selector, podLabels)) {
    p('Deployment: selector does not match its pod template labels');
  }
  if (matchesSelector(deployment.spec?.selector, jobPodLabels)) {
    p('Deployment: selector also matches the migration pods');
  }
  if (deployment.spec?.strategy?.rollingUpdate?.maxUnavailable !== 0) {
    p('Deployment: rollingUpdate.maxUnavailable must be 0 (never below the current capacity)');
  }
  const containers: any[] = pod.spec?.containers ?? [];
  const container = containers.find((c) => c.name === 'io-bridge') ?? containers[0];
  if (!container) return [...problems, 'Deployment: no container'];

  // Settings: the ConfigMap and Secret the container reads.
  const envFrom = (c: any) => ({
    configMaps: (c.envFrom ?? []).filter((e: any) => e.configMapRef).map((e: any) => e.configMapRef.name),
    secrets: (c.envFrom ?? []).filter((e: any) => e.secretRef).map((e: any) => e.secretRef.name),
  });
  const refs = envFrom(container);
  if (refs.configMaps.length !== 1) p('Deployment: envFrom must name exactly one ConfigMap');
  if (refs.secrets.length !== 1 || refs.secrets[0] !== secret.metadata.name) {
    p(`Deployment: envFrom must name the Secret ${secret.metadata.name} that secret.example.yaml describes`);
  }
  const settings = ofKind('ConfigMap').find((c) => c.metadata.name === refs.configMaps[0]);
  if (!settings) return [...problems, `Deployment: envFrom ConfigMap ${refs.configMaps[0]} not found`];
  const env: Labels = settings.data ?? {};

  // Port: one named port, equal to PORT, probed and served by name.
  const port = (container.ports ?? []).find((x: any) => x.name === APP.portName);
  if (!port) p(`Deployment: no container port named ${APP.portName}`);
  else if (port.containerPort !== Number(env.PORT)) {
    p(`Deployment: container port ${port.containerPort} is not PORT=${env.PORT} from the ConfigMap`);
  }
  const portNumber = port?.containerPort;
  const probes: Array<[string, string]> = [
    ['startupProbe', APP.livePath],
    ['livenessProbe', APP.livePath],
    ['readinessProbe', APP.readyPath],
  ];
  for (const [name, path] of probes) {
    const get = container[name]?.httpGet;
    if (!get) p(`Deployment: ${name} must be an httpGet probe`);
    else {
      if (get.path !== path) p(`Deployment: ${name} path ${get.path} must be ${path}`);
      if (get.port !== APP.portName && get.port !== portNumber) {
        p(`Deployment: ${name} port ${get.port} is not the container port ${APP.portName}`);
      }
    }
  }
  const scrapePort = pod.metadata?.annotations?.['prometheus.io/port'];
  if (scrapePort !== undefined && Number(scrapePort) !== portNumber) {
    p(`Deployment: prometheus.io/port ${scrapePort} is not the container port ${portNumber}`);
  }

  // Service: the same pods (and not the migration's), the container port by name.
  if (!matchesMap(service.spec?.selector, podLabels)) p('Service: selector does not match the server pods');
  if (matchesMap(service.spec?.selector, jobPodLabels))
    p('Service: selector also matches the migration pods');
  for (const sp of service.spec?.ports ?? []) {
    if (sp.targetPort !== APP.portName) {
      p(
        `Service: port ${sp.port} must target the container port by name (${APP.portName}), not ${sp.targetPort}`,
      );
    }
  }

  // Shutdown timing: preStop sleep + SHUTDOWN_GRACE_MS + margin within the grace period.
  const sleepS = preStopSleepSeconds(container);
  const graceMs = Number(env.SHUTDOWN_GRACE_MS);
  const tgps = pod.spec?.terminationGracePeriodSeconds;
  if (sleepS === undefined) p('Deployment: preStop must sleep (exec sleep N, or sleep.seconds)');
  if (!Number.isInteger(graceMs)) p('ConfigMap: SHUTDOWN_GRACE_MS must be set (ms)');
  if (typeof tgps !== 'number') p('Deployment: terminationGracePeriodSeconds must be set');
  else if (sleepS !== undefined && tgps * 1000 < sleepS * 1000 + graceMs + APP.shutdownMarginMs) {
    p(
      `Deployment: terminationGracePeriodSeconds ${tgps} s < preStop ${sleepS} s + SHUTDOWN_GRACE_MS ` +
        `${graceMs / 1000} s + ${APP.shutdownMarginMs / 1000} s margin`,
    );
  }

  // Settings the deployment relies on.
  if (env.MIGRATIONS_RUN !== 'false') p('ConfigMap: MIGRATIONS_RUN must be "false" (the Job migrates)');
  if (env.HOST !== '0.0.0.0') p('ConfigMap: HOST must be 0.0.0.0 (probes and the Service reach the pod IP)');
  if (env.AGENTS_CONFIG) {
    const dir = posix.dirname(env.AGENTS_CONFIG);
    const key = posix.basename(env.AGENTS_CONFIG);
    const mount = (container.volumeMounts ?? []).find((m: any) => m.mountPath === dir);
    const volume = (pod.spec?.volumes ?? []).find((v: any) => v.name === mount?.name);
    const source = ofKind('ConfigMap').find((c) => c.metadata.name === volume?.configMap?.name);
    if (!mount || !volume?.configMap)
      p(`Deployment: AGENTS_CONFIG ${env.AGENTS_CONFIG} is not in a ConfigMap mount`);
    else if (!mount.readOnly) p('Deployment: the AGENTS_CONFIG mount must be readOnly');
    else if (!source?.data?.[key]) {
      p(
        `Deployment: AGENTS_CONFIG ${env.AGENTS_CONFIG}: ConfigMap ${volume.configMap.name} has no key ${key}`,
      );
    }
  }

  // HPA owns the replica count; PDB leaves room for drains.
  const target = hpa.spec?.scaleTargetRef ?? {};
  if (
    target.apiVersion !== 'apps/v1' ||
    target.kind !== 'Deployment' ||
    target.name !== deployment.metadata.name
  ) {
    p(`HorizontalPodAutoscaler: scaleTargetRef must be the Deployment ${deployment.metadata.name}`);
  }
  const minReplicas = hpa.spec?.minReplicas ?? 1;
  if (minReplicas < 2) p('HorizontalPodAutoscaler: minReplicas must be at least 2');
  if (!(hpa.spec?.maxReplicas >= minReplicas)) p('HorizontalPodAutoscaler: maxReplicas < minReplicas');
  if (deployment.spec?.replicas !== undefined) {
    p('Deployment: spec.replicas must be left to the HorizontalPodAutoscaler (apply would reset it)');
  }
  if (!matchesSelector(pdb.spec?.selector, podLabels))
    p('PodDisruptionBudget: selector does not match the server pods');
  if (matchesSelector(pdb.spec?.selector, jobPodLabels)) {
    p('PodDisruptionBudget: selector also matches the migration pods');
  }
  if (typeof pdb.spec?.minAvailable === 'number' && pdb.spec.minAvailable >= minReplicas) {
    p('PodDisruptionBudget: minAvailable must be below the HPA minReplicas, or drains block');
  }

  // Postgres connections at the peak: every pod of a surging rollout at maxReplicas, each with its
  // pool and its LISTEN connection, plus the migration Job.
  const pool = Number(env.DATABASE_POOL_SIZE ?? 10);
  const surge = deployment.spec?.strategy?.rollingUpdate?.maxSurge;
  const peakPods = (hpa.spec?.maxReplicas ?? 0) + (typeof surge === 'number' ? surge : 1);
  if (peakPods * (pool + 1) + 1 > APP.postgresConnections) {
    p(
      `ConfigMap: ${peakPods} pods × (DATABASE_POOL_SIZE ${pool} + 1) + 1 connections exceed ` +
        `Postgres' default ${APP.postgresConnections}`,
    );
  }

  // NetworkPolicies: the server takes traffic on its port from named peers only; egress for
  // DNS, Postgres and HTTPS; the migration pods reach DNS and Postgres.
  const policies = ofKind('NetworkPolicy');
  for (const np of policies) {
    const sel = np.spec?.podSelector;
    if (!matchesSelector(sel, podLabels) && !matchesSelector(sel, jobPodLabels)) {
      p(`NetworkPolicy ${np.metadata.name}: podSelector matches no io-bridge pods`);
    }
  }
  const checkEgress = (labels: Labels, who: string, needed: Array<[number, string]>): K8sObject[] => {
    const selecting = policies.filter((np) => matchesSelector(np.spec?.podSelector, labels));
    if (!selecting.length) p(`NetworkPolicy: none selects the ${who} pods`);
    const egressRules = selecting.flatMap((np) => np.spec?.egress ?? []);
    if (selecting.some((np) => (np.spec?.policyTypes ?? []).includes('Egress'))) {
      for (const [port, protocol] of needed) {
        if (!allowsPort(egressRules, port, protocol))
          p(`NetworkPolicy: ${who} egress must allow ${port}/${protocol}`);
      }
    }
    return selecting;
  };
  const serverPolicies = checkEgress(podLabels, 'server', [
    [53, 'UDP'],
    [53, 'TCP'],
    [5432, 'TCP'],
    [443, 'TCP'],
    [otlpPort(env), 'TCP'],
  ]);
  checkEgress(jobPodLabels, 'migration', [
    [53, 'UDP'],
    [53, 'TCP'],
    [5432, 'TCP'],
  ]);
  if (serverPolicies.length) {
    const ingressRules = serverPolicies.flatMap((np) => np.spec?.ingress ?? []);
    if (!allowsPort(ingressRules, portNumber) && !allowsPort(ingressRules, APP.portName)) {
      p(`NetworkPolicy: server ingress must allow port ${portNumber}`);
    }
    if (ingressRules.some((r: any) => !r.from?.length || r.from.some((f: any) => !f.namespaceSelector))) {
      p('NetworkPolicy: server ingress must name its peers (namespaceSelector), not allow everyone');
    }
  }

  // The migration Job: same image and settings, its own command, labels no server selector picks.
  const jobContainers: any[] = job.spec?.template?.spec?.containers ?? [];
  if (jobContainers.length !== 1) p('Job: expected one container');
  const migrate = jobContainers[0] ?? {};
  if (migrate.image !== container.image) {
    p(`Job: image ${migrate.image} must be the same image as the Deployment (${container.image})`);
  }
  const command = [...(migrate.command ?? []), ...(migrate.args ?? [])];
  if (JSON.stringify(command) !== JSON.stringify(APP.migrateCommand)) {
    p(`Job: command must be ${APP.migrateCommand.join(' ')}`);
  }
  if (JSON.stringify(envFrom(migrate)) !== JSON.stringify(refs)) p('Job: envFrom must match the Deployment');
  if (!['Never', 'OnFailure'].includes(job.spec?.template?.spec?.restartPolicy)) p('Job: restartPolicy');
  if (typeof job.spec?.backoffLimit !== 'number') p('Job: backoffLimit must be set');
  if (typeof job.spec?.ttlSecondsAfterFinished !== 'number') p('Job: ttlSecondsAfterFinished must be set');

  // Security, for every container of every workload.
  for (const workload of [deployment, job]) {
    const spec = workload.spec?.template?.spec ?? {};
    const id = `${workload.kind}/${workload.metadata.name}`;
    if (spec.automountServiceAccountToken !== false) p(`${id}: automountServiceAccountToken must be false`);
    if (spec.enableServiceLinks !== false) {
      p(`${id}: enableServiceLinks must be false (a Service named io-bridge injects IO_BRIDGE_* variables)`);
    }
    const podSc = spec.securityContext ?? {};
    for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])]) {
      const sc = c.securityContext ?? {};
      const cid = `${id} container ${c.name}`;
      if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) p(`${cid}: runAsNonRoot must be true`);
      if ((sc.runAsUser ?? podSc.runAsUser) !== APP.uid)
        p(`${cid}: runAsUser must be ${APP.uid} (the image's user)`);
      if (sc.readOnlyRootFilesystem !== true) p(`${cid}: readOnlyRootFilesystem must be true`);
      if (sc.allowPrivilegeEscalation !== false) p(`${cid}: allowPrivilegeEscalation must be false`);
      if (sc.privileged === true) p(`${cid}: must not be privileged`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) p(`${cid}: capabilities must drop ALL`);
      if ((sc.seccompProfile ?? podSc.seccompProfile)?.type !== 'RuntimeDefault') {
        p(`${cid}: seccompProfile must be RuntimeDefault`);
      }
      const tmp = (c.volumeMounts ?? []).find((m: any) => m.mountPath === '/tmp');
      const tmpVolume = (spec.volumes ?? []).find((v: any) => v.name === tmp?.name);
      if (!tmpVolume?.emptyDir) p(`${cid}: /tmp must be an emptyDir (the root filesystem is read-only)`);
      if (!c.resources?.requests?.cpu || !c.resources?.limits?.memory) {
        p(`${cid}: resources need a cpu request (for the HPA) and a memory limit`);
      }
    }
  }
  return problems;
}

/** The example Ingress: SSE-friendly annotations, the Service's named port, no internal paths. */
function ingressProblems(ingress: K8sObject, service: K8sObject, maxBodyBytes: number): string[] {
  const problems: string[] = [];
  const a = ingress.metadata.annotations ?? {};
  const expected: Labels = {
    'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
    'nginx.ingress.kubernetes.io/proxy-http-version': '1.1',
  };
  for (const [k, v] of Object.entries(expected))
    if (a[k] !== v) problems.push(`Ingress: ${k} must be "${v}"`);
  for (const k of ['proxy-read-timeout', 'proxy-send-timeout']) {
    if (!(Number(a[`nginx.ingress.kubernetes.io/${k}`]) >= 3600))
      problems.push(`Ingress: ${k} must be ≥ 3600`);
  }
  const size = /^(\d+)([kmg]?)$/i.exec(a['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '');
  const bytes = size ? Number(size[1]) * 1024 ** ' kmg'.indexOf((size[2] || ' ').toLowerCase()) : 0;
  if (bytes < maxBodyBytes)
    problems.push(`Ingress: proxy-body-size must be ≥ MAX_BODY_BYTES (${maxBodyBytes})`);
  const servicePorts = (service.spec?.ports ?? []).map((x: any) => x.name);
  for (const rule of ingress.spec?.rules ?? []) {
    for (const path of rule.http?.paths ?? []) {
      const backend = path.backend?.service;
      if (backend?.name !== service.metadata.name)
        problems.push(`Ingress: ${path.path} is not routed to the Service`);
      if (!servicePorts.includes(backend?.port?.name)) {
        problems.push(`Ingress: ${path.path} must use a named Service port (${servicePorts.join(', ')})`);
      }
      for (const internal of ['/metrics', '/health/live', '/health/ready']) {
        const covers =
          path.path === internal ||
          (path.pathType !== 'Exact' && (path.path === '/' || internal.startsWith(`${path.path}/`)));
        if (covers) problems.push(`Ingress: ${path.path} exposes ${internal}`);
      }
    }
  }
  return problems;
}

/** Dockerfile instructions with continuation lines joined and comments dropped. */
function dockerInstructions(text: string): Array<{ op: string; args: string }> {
  const out: Array<{ op: string; args: string }> = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    current += `${line.replace(/\\\s*$/, '')} `;
    if (/\\\s*$/.test(line)) continue;
    const m = /^\s*(\w+)\s+(.*?)\s*$/.exec(current);
    if (m) out.push({ op: m[1].toUpperCase(), args: m[2] });
    current = '';
  }
  return out;
}

function dockerfileProblems(text: string, port: number): string[] {
  const problems: string[] = [];
  const all = dockerInstructions(text);
  const firstFrom = all.findIndex((i) => i.op === 'FROM');
  const args = Object.fromEntries(
    all
      .slice(0, firstFrom)
      .filter((i) => i.op === 'ARG')
      .map((i) => i.args.split('=') as [string, string]),
  );
  const froms = all.filter((i) => i.op === 'FROM').map((i) => i.args.split(/\s+/)[0]);
  for (const from of froms) {
    const image = from.replace(/\$\{(\w+)\}/g, (_, name: string) => args[name] ?? '');
    if (image !== APP.baseImage && !/^(deps|build|prod-deps)$/.test(image)) {
      problems.push(`Dockerfile: FROM ${from} (${image}) is not ${APP.baseImage}`);
    }
  }
  const final = all.slice(all.map((i) => i.op).lastIndexOf('FROM'));
  const last = (op: string) => final.filter((i) => i.op === op).pop()?.args;
  if (last('USER') !== `${APP.uid}:${APP.gid}`)
    problems.push(`Dockerfile: final USER must be ${APP.uid}:${APP.gid}`);
  if (last('EXPOSE') !== String(port))
    problems.push(`Dockerfile: EXPOSE must be ${port} (the ConfigMap's PORT)`);
  const env = final
    .filter((i) => i.op === 'ENV')
    .flatMap((i) => i.args.split(/\s+/))
    .join(' ');
  for (const pair of ['NODE_ENV=production', 'HOST=0.0.0.0', `PORT=${port}`]) {
    if (!env.split(' ').includes(pair)) problems.push(`Dockerfile: final stage must set ENV ${pair}`);
  }
  let cmd: unknown;
  try {
    cmd = JSON.parse(last('CMD') ?? '');
  } catch {
    cmd = undefined;
  }
  if (JSON.stringify(cmd) !== JSON.stringify(APP.serverCommand)) {
    problems.push(`Dockerfile: CMD must be the exec form ${JSON.stringify(APP.serverCommand)}`);
  }
  const runs = all.filter((i) => i.op === 'RUN').map((i) => i.args);
  if (!runs.some((r) => /npm prune --omit=dev/.test(r)))
    problems.push('Dockerfile: production deps by npm prune');
  if (runs.some((r) => /--ignore-scripts/.test(r))) problems.push('Dockerfile: install scripts must run');
  if (final.some((i) => i.op === 'COPY' && /^\.\s/.test(i.args)))
    problems.push('Dockerfile: runtime copies the context');
  return problems;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sourceFiles(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe('container image and Kubernetes manifests', () => {
  const files = yamlFiles(K8S);
  const manifests = files.flatMap((f) => parseManifests(f));
  const inBase = manifests.filter((m) => dirname(m.file) === BASE);
  const kustomization = inBase.find((m) => typeKey(m.object) === KUSTOMIZATION)!;
  const applied = new Set<string>((kustomization?.object.resources as string[] | undefined) ?? []);
  const secretExample = inBase.find((m) => basename(m.file) === 'secret.example.yaml')!;
  /** What `kubectl apply -k` creates, plus the Secret the operator creates from the example. */
  const baseObjects = (): K8sObject[] =>
    structuredClone([
      ...inBase.filter((m) => applied.has(basename(m.file))).map((m) => m.object),
      secretExample.object,
    ]);
  const find = (objs: K8sObject[], kind: string, name?: string) =>
    objs.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name))!;
  const container = (objs: K8sObject[]) => find(objs, 'Deployment').spec.template.spec.containers[0];
  const settings = (objs: K8sObject[]) => find(objs, 'ConfigMap', 'io-bridge-config').data as Labels;

  describe('schemas', () => {
    it('finds the base, the example Secret and the example Ingress', () => {
      expect(files.map((f) => relative(K8S, f).split('\\').join('/'))).toEqual(
        expect.arrayContaining([
          'base/kustomization.yaml',
          'base/deployment.yaml',
          'base/secret.example.yaml',
          'examples/ingress.yaml',
        ]),
      );
      expect(kustomization).toBeDefined();
      expect(secretExample?.object.kind).toBe('Secret');
    });

    it('validates every object under deploy/k8s against the Kubernetes schemas', () => {
      const problems = manifests.flatMap(schemaProblems);
      expect(problems).toEqual([]);
      const kinds = manifests.map((m) => m.object.kind).sort();
      expect(kinds).toEqual([
        'ConfigMap',
        'ConfigMap',
        'Deployment',
        'HorizontalPodAutoscaler',
        'Ingress',
        'Job',
        'Kustomization',
        'NetworkPolicy',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'PodMonitor',
        'Secret',
        'Service',
      ]);
    });

    it('type-checks every object against the models, so unknown or misplaced fields fail', () => {
      expect(typeProblems(manifests)).toEqual([]);
    });

    it('rejects what the schemas forbid, an unknown kind, and an unknown field', () => {
      const deployment = inBase.find((m) => m.object.kind === 'Deployment')!;
      const badType = structuredClone(deployment);
      badType.object.spec.template.spec.containers[0].ports[0].containerPort = '3000';
      expect(schemaProblems(badType)).toEqual([expect.stringMatching(/containerPort must be integer/)]);
      const badQuantity = structuredClone(deployment);
      badQuantity.object.spec.template.spec.containers[0].resources.limits.memory = '768 megs';
      expect(schemaProblems(badQuantity)).toEqual([
        expect.stringMatching(/memory must match format "quantity"/),
      ]);
      const unknownKind = structuredClone(deployment);
      unknownKind.object.apiVersion = 'monitoring.coreos.com/v1';
      unknownKind.object.kind = 'ServiceMonitor';
      expect(schemaProblems(unknownKind)).toEqual([expect.stringMatching(/no schema for .*ServiceMonitor/)]);
      const misplaced = structuredClone(deployment);
      misplaced.object.spec.template.spec.securityContext.readOnlyRootFilesystem = true;
      expect(schemaProblems(misplaced)).toEqual([]); // the JSON schema lets it through…
      expect(typeProblems([misplaced])).toEqual([
        expect.stringMatching(/'"readOnlyRootFilesystem"' does not exist in type 'IPodSecurityContext'/),
      ]); // …the types do not
    });
  });

  describe('kustomization', () => {
    it('lists every manifest of the base, each exists, and the example Secret stays out', () => {
      const baseFiles = files.filter((f) => dirname(f) === BASE);
      expect(kustomizationProblems(kustomization.object, BASE, baseFiles)).toEqual([]);
      expect([...applied].sort()).toEqual([
        'agents-configmap.yaml',
        'configmap.yaml',
        'deployment.yaml',
        'hpa.yaml',
        'migration-job.yaml',
        'networkpolicy.yaml',
        'pdb.yaml',
        'service.yaml',
      ]);
    });

    it('notices a missing file, an unlisted manifest and a listed example', () => {
      const baseFiles = files.filter((f) => dirname(f) === BASE);
      const k = structuredClone(kustomization.object);
      k.resources = [
        ...k.resources.filter((r: string) => r !== 'pdb.yaml'),
        'gone.yaml',
        'secret.example.yaml',
      ];
      expect(kustomizationProblems(k, BASE, baseFiles)).toEqual(
        expect.arrayContaining([
          'kustomization: gone.yaml is listed but does not exist',
          'kustomization: pdb.yaml is not listed',
          'kustomization: secret.example.yaml is an example and must not be applied',
        ]),
      );
    });
  });

  describe('consistency with the app', () => {
    it('holds for the base', () => {
      expect(consistencyProblems(baseObjects())).toEqual([]);
    });

    const broken: Array<[string, (o: K8sObject[]) => void, RegExp]> = [
      [
        'more replicas than Postgres connections',
        (o) => (find(o, 'HorizontalPodAutoscaler').spec.maxReplicas = 20),
        /21 pods × \(DATABASE_POOL_SIZE 7 \+ 1\) \+ 1 connections exceed/,
      ],
      [
        'a wrong readiness path',
        (o) => (container(o).readinessProbe.httpGet.path = '/health'),
        /readinessProbe path/,
      ],
      [
        'liveness on the readiness path',
        (o) => (container(o).livenessProbe.httpGet.path = '/health/ready'),
        /livenessProbe path/,
      ],
      ['a container port other than PORT', (o) => (settings(o).PORT = '8080'), /is not PORT=8080/],
      [
        'a probe on another port',
        (o) => (container(o).startupProbe.httpGet.port = 8080),
        /startupProbe port/,
      ],
      [
        'a Service targeting a number',
        (o) => (find(o, 'Service').spec.ports[0].targetPort = 3000),
        /by name/,
      ],
      [
        'a grace period too short',
        (o) => (find(o, 'Deployment').spec.template.spec.terminationGracePeriodSeconds = 30),
        /terminationGracePeriodSeconds 30 s </,
      ],
      [
        'a longer SHUTDOWN_GRACE_MS',
        (o) => (settings(o).SHUTDOWN_GRACE_MS = '30000'),
        /SHUTDOWN_GRACE_MS 30 s/,
      ],
      ['no preStop sleep', (o) => delete container(o).lifecycle, /preStop must sleep/],
      [
        'a PDB for other pods',
        (o) =>
          (find(o, 'PodDisruptionBudget').spec.selector.matchLabels['app.kubernetes.io/component'] =
            'worker'),
        /PodDisruptionBudget: selector does not match/,
      ],
      [
        'an HPA aimed elsewhere',
        (o) => (find(o, 'HorizontalPodAutoscaler').spec.scaleTargetRef.name = 'other'),
        /scaleTargetRef/,
      ],
      ['spec.replicas beside the HPA', (o) => (find(o, 'Deployment').spec.replicas = 2), /spec.replicas/],
      [
        'a Service that also selects the Job',
        (o) => delete find(o, 'Service').spec.selector['app.kubernetes.io/component'],
        /Service: selector also matches the migration pods/,
      ],
      [
        'a NetworkPolicy for other pods',
        (o) =>
          (find(o, 'NetworkPolicy', 'io-bridge').spec.podSelector.matchLabels['app.kubernetes.io/name'] =
            'x'),
        /matches no io-bridge pods/,
      ],
      [
        'no Postgres egress',
        (o) => find(o, 'NetworkPolicy', 'io-bridge').spec.egress.splice(1, 1),
        /server egress must allow 5432\/TCP/,
      ],
      [
        'no egress to the OTLP collector',
        (o) => find(o, 'NetworkPolicy', 'io-bridge').spec.egress.splice(3, 1),
        /server egress must allow 4318\/TCP/,
      ],
      [
        'an OTLP collector on a port the policy blocks',
        (o) => (settings(o).OTEL_EXPORTER_OTLP_ENDPOINT = 'http://otel-collector.monitoring:4317'),
        /server egress must allow 4317\/TCP/,
      ],
      [
        'ingress from everyone',
        (o) => delete find(o, 'NetworkPolicy', 'io-bridge').spec.ingress[0].from,
        /must name its peers/,
      ],
      [
        'a Job on another image',
        (o) => (find(o, 'Job').spec.template.spec.containers[0].image = 'io-bridge:0.0.9'),
        /same image/,
      ],
      [
        'a writable root filesystem in the Job',
        (o) =>
          (find(o, 'Job').spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem = false),
        /Job\/io-bridge-migrate container migrate: readOnlyRootFilesystem/,
      ],
      [
        'runAsNonRoot dropped',
        (o) => {
          delete find(o, 'Deployment').spec.template.spec.securityContext.runAsNonRoot;
          delete container(o).securityContext.runAsNonRoot;
        },
        /container io-bridge: runAsNonRoot/,
      ],
      ['capabilities kept', (o) => (container(o).securityContext.capabilities.drop = []), /drop ALL/],
      [
        'no /tmp',
        (o) =>
          (container(o).volumeMounts = container(o).volumeMounts.filter((m: any) => m.mountPath !== '/tmp')),
        /\/tmp must be an emptyDir/,
      ],
      [
        'service links',
        (o) => (find(o, 'Deployment').spec.template.spec.enableServiceLinks = true),
        /enableServiceLinks/,
      ],
      ['replicas migrating on start', (o) => (settings(o).MIGRATIONS_RUN = 'true'), /MIGRATIONS_RUN/],
      [
        'AGENTS_CONFIG outside its mount',
        (o) => (settings(o).AGENTS_CONFIG = '/etc/agents.json'),
        /AGENTS_CONFIG/,
      ],
      [
        'a missing agents key',
        (o) => (settings(o).AGENTS_CONFIG = '/etc/io-bridge/other.json'),
        /has no key other.json/,
      ],
      [
        'maxUnavailable 1',
        (o) => (find(o, 'Deployment').spec.strategy.rollingUpdate.maxUnavailable = 1),
        /maxUnavailable/,
      ],
      [
        'another Secret name',
        (o) => (find(o, 'Secret').metadata.name = 'io-bridge-secrets'),
        /envFrom must name the Secret/,
      ],
      ['a namespace', (o) => (find(o, 'Service').metadata.namespace = 'prod'), /namespace-agnostic/],
    ];
    it('admits traces to a collector on another port once the policy names it', () => {
      const objs = baseObjects();
      settings(objs).OTEL_EXPORTER_OTLP_ENDPOINT = 'http://otel-collector.monitoring:4317';
      find(objs, 'NetworkPolicy', 'io-bridge').spec.egress[3].ports[0].port = 4317;
      expect(consistencyProblems(objs)).toEqual([]);
      expect(loadConfig(settings(objs)).tracing.url).toBe('http://otel-collector.monitoring:4317/v1/traces');
    });

    it.each(broken)('rejects a copy with %s', (_name, breakIt, expected) => {
      const objs = baseObjects();
      breakIt(objs);
      expect(consistencyProblems(objs)).toEqual(expect.arrayContaining([expect.stringMatching(expected)]));
    });
  });

  describe('settings, as the app reads them', () => {
    const env = () => ({ ...settings(baseObjects()), ...(secretExample.object.stringData as Labels) });

    it('the ConfigMap plus the example Secret pass loadConfig, with the values the manifests assume', () => {
      const config = loadConfig(env());
      expect(config.host).toBe('0.0.0.0');
      expect(config.port).toBe(container(baseObjects()).ports[0].containerPort);
      expect(config.database.migrationsRun).toBe(false);
      expect(config.shutdownGraceMs).toBe(Number(settings(baseObjects()).SHUTDOWN_GRACE_MS));
      expect(config.agentsConfigPath).toBe('/etc/io-bridge/agents.json');
    });

    it('every ConfigMap and Secret key is a variable the app reads', () => {
      const source = sourceFiles(join(ROOT, 'src'))
        .map((f) => readFileSync(f, 'utf8'))
        .join('\n');
      const unread = Object.keys(env()).filter((key) => !new RegExp(`\\b${key}\\b`).test(source));
      expect(unread).toEqual([]);
    });

    it('the example Secret holds placeholders only, as stringData', () => {
      const secret = secretExample.object;
      expect(secret.data).toBeUndefined();
      expect(Object.keys(secret.stringData).sort()).toEqual(['DATABASE_URL', 'OPENAI_API_KEY']);
      for (const value of Object.values(secret.stringData as Labels)) expect(value).toContain('CHANGE_ME');
    });

    it('agents.json passes the AGENTS_CONFIG parser of the app with the agents it knows', () => {
      const agents = find(baseObjects(), 'ConfigMap', 'io-bridge-agents').data['agents.json'] as string;
      const dir = mkdtempSync(join(tmpdir(), 'io-bridge-agents-'));
      try {
        const file = join(dir, 'agents.json');
        writeFileSync(file, agents);
        const ids = Object.values(mastra.listAgents()).map((a) => a.id);
        const overrides = loadAgentsConfig({ agents: ids, tools: [] }, file, {}).agents;
        expect(overrides.get('assistant')?.model).toBe(settings(baseObjects()).MODEL);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('example PodMonitor', () => {
    const monitor = manifests.find((m) => m.object.kind === 'PodMonitor')!;

    it('is outside the base and scrapes /metrics on the named port of the server pods only', () => {
      expect(dirname(monitor.file)).toBe(join(K8S, 'examples'));
      const objs = baseObjects();
      expect(podMonitorProblems(monitor.object, find(objs, 'Deployment'), find(objs, 'Job'))).toEqual([]);
    });

    it('notices another port, another path and a selector that takes the migration pods too', () => {
      const bad = structuredClone(monitor.object);
      bad.spec.podMetricsEndpoints[0].port = 'metrics';
      bad.spec.podMetricsEndpoints[0].path = '/prometheus';
      delete bad.spec.selector.matchLabels['app.kubernetes.io/component'];
      const objs = baseObjects();
      expect(podMonitorProblems(bad, find(objs, 'Deployment'), find(objs, 'Job'))).toEqual([
        'PodMonitor: selector also matches the migration pods',
        'PodMonitor: port metrics is not a named container port',
        'PodMonitor: path /prometheus is not /metrics',
      ]);
    });
  });

  describe('example Ingress', () => {
    const ingress = manifests.find((m) => m.object.kind === 'Ingress')!;

    it('is outside the base, SSE-ready, and exposes neither health nor metrics', () => {
      expect(dirname(ingress.file)).toBe(join(K8S, 'examples'));
      const maxBody = loadConfig({ ...settings(baseObjects()) }).limits.maxBodyBytes;
      expect(ingressProblems(ingress.object, find(baseObjects(), 'Service'), maxBody)).toEqual([]);
    });

    it('notices buffering, short timeouts, a small body limit and a catch-all path', () => {
      const bad = structuredClone(ingress.object);
      const annotations = bad.metadata.annotations!;
      annotations['nginx.ingress.kubernetes.io/proxy-buffering'] = 'on';
      annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'] = '60';
      annotations['nginx.ingress.kubernetes.io/proxy-body-size'] = '1m';
      bad.spec.rules[0].http.paths[0].path = '/';
      expect(ingressProblems(bad, find(baseObjects(), 'Service'), 4 * 1024 * 1024)).toEqual([
        'Ingress: nginx.ingress.kubernetes.io/proxy-buffering must be "off"',
        'Ingress: proxy-read-timeout must be ≥ 3600',
        'Ingress: proxy-body-size must be ≥ MAX_BODY_BYTES (4194304)',
        'Ingress: / exposes /metrics',
        'Ingress: / exposes /health/live',
        'Ingress: / exposes /health/ready',
      ]);
    });
  });

  describe('image and docker compose', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const port = () => Number(settings(baseObjects()).PORT);

    it('the Dockerfile agrees with the manifests (base image, user, port, command, pruned deps)', () => {
      expect(dockerfileProblems(dockerfile, port())).toEqual([]);
      expect(existsSync(join(ROOT, 'src', 'main.ts'))).toBe(true);
      expect(existsSync(join(ROOT, 'src', 'database', 'migrate.ts'))).toBe(true);
      const engines = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node as string;
      expect(engines).toMatch(new RegExp(`^>=\\s*${/node:(\d+)/.exec(APP.baseImage)![1]}\\b`));
    });

    it('notices a root user, another port and a shell-form CMD', () => {
      const bad = dockerfile
        .replace(/^USER .*$/m, 'USER node')
        .replace(/^EXPOSE .*$/m, 'EXPOSE 8080')
        .replace(/^CMD .*$/m, 'CMD node dist/src/main.js');
      expect(dockerfileProblems(bad, port())).toEqual([
        `Dockerfile: final USER must be ${APP.uid}:${APP.gid}`,
        "Dockerfile: EXPOSE must be 3000 (the ConfigMap's PORT)",
        `Dockerfile: CMD must be the exec form ${JSON.stringify(APP.serverCommand)}`,
      ]);
    });

    it('.dockerignore keeps local state and secrets out of the build context', () => {
      const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
        .split('\n')
        .map((l) => l.trim());
      expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git', '.env', '.data']));
    });

    it('docker-compose builds the Dockerfile, migrates first, and waits for /health/ready', () => {
      const compose = parseYaml(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'));
      const app = compose.services['io-bridge'];
      expect(app.build.dockerfile).toBe('Dockerfile');
      expect(app.healthcheck.test.join(' ')).toContain('/health/ready');
      expect(app.environment.MIGRATIONS_RUN).toBe('false');
      expect(app.depends_on.migrate.condition).toBe('service_completed_successfully');
      expect(compose.services.migrate.command).toEqual(APP.migrateCommand);
      const stopS = Number(/^(\d+)s$/.exec(app.stop_grace_period)?.[1]);
      expect(stopS * 1000).toBeGreaterThan(Number(app.environment.SHUTDOWN_GRACE_MS));
    });
  });

  describe('kustomize build', () => {
    const kubectl = (() => {
      try {
        execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore', timeout: 20_000 });
        return true;
      } catch {
        return false;
      }
    })();
    (kubectl ? it : it.skip)('renders, and the rendered objects pass the same checks', () => {
      const out = execFileSync('kubectl', ['kustomize', BASE], { encoding: 'utf8', timeout: 60_000 });
      const rendered = parseManifests(join(BASE, 'rendered.yaml'), out);
      expect(rendered.flatMap(schemaProblems)).toEqual([]);
      expect(rendered).toHaveLength(baseObjects().length - 1);
      expect(consistencyProblems([...rendered.map((m) => m.object), secretExample.object])).toEqual([]);
    });
  });
});
