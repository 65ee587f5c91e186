// Types of diagram.js for the TypeScript tests.
export interface BandMachine {
  readonly id?: string;
  readonly definition?: { readonly states?: Readonly<Record<string, unknown>> } | null;
  readonly mermaid?: string;
  readonly states?: readonly string[];
  readonly dwell?: { readonly entry_secs: number; readonly exit_secs: number } | null;
}
export interface Box {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}
export declare const DEFAULT_STATES: readonly string[];
export declare function machineStates(band: BandMachine | null | undefined): readonly string[];
export declare function layout(states: readonly string[]): Record<string, Box>;
export declare function renderMachineSvg(
  band: BandMachine | null | undefined,
  highlight?: { readonly current?: string | null; readonly candidate?: string | null },
): string;
