// Types of peers-table.mjs, for its test (test/bench/peers-table.test.ts).
export interface Body {
  label: string;
  code: string;
  expect: number;
}
export declare const BODIES: { one: Body; ten: Body; compute: Body };
export declare const PROBE_ENV: string;
export declare function probeBody(where: { hostFile: string; token: string; port: number }): string;
export interface Probe {
  hostRealm?: boolean;
  systemFile?: boolean;
  hostFile?: boolean;
  env?: boolean;
  socket?: boolean;
  spawn?: boolean;
}
export declare function isolationSummary(found: Probe | undefined, failed?: string): string;
export declare function quantile(samples: readonly number[], q: number): number;
export interface Sample {
  resultMs: number;
  endMs?: number;
  firstCallMs?: number;
}
export declare function perCallMicros(tenRuns: readonly Sample[] | undefined): number | undefined;
export interface SystemSamples {
  name: string;
  samples: Record<string, Sample[]> | undefined;
  skipped?: string;
  isolation: string;
}
export declare function peersRows(systems: readonly SystemSamples[]): { name: string; cells: string[]; isolation: string }[];
export declare function peersTable(title: string, systems: readonly SystemSamples[]): string;
