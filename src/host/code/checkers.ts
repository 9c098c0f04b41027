/**
 * The checks the warm type checker (checker-server.ts) runs, one function per TypeScript generation: a
 * body and the declarations in, the errors tsc -p would report out. Apart from the server so the tests can
 * run a checker in their own process and watch what it reads.
 *
 * No file of the host is read for a body: the project's files are served from memory, and the file
 * system is asked only about the TypeScript package's own files (its standard library). Any other path a
 * body names (a type-level `import("/etc/shadow")`, a reference path, a relative import) does not exist
 * for the checker, whether it exists on the host or not (test/host/code/checker-files.test.ts).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { CHECK_CONFIG, type BodyError } from "./check-protocol.js";

/** Where the project lives: a directory that is never on disk, so nothing of the host's is read. */
const ROOT = "/ears-typecheck";
const CODE = `${ROOT}/code.ts`;
const DECLARATIONS = `${ROOT}/ears.d.ts`;
const CONFIG = `${ROOT}/tsconfig.json`;
/** Checks one body against the declarations. */
export type Checker = (declarations: string, code: string) => Promise<{ errors: BodyError[]; other: string[] }>;

/** Where each line starts, split where TypeScript ends a line. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (const match of text.matchAll(/\r\n|[\n\r\u2028\u2029]/g)) starts.push(match.index + match[0].length);
  return starts;
}

/** 1-based line and column (UTF-16 units, as tsc counts) of `position` in `text`. */
function lineAndColumn(starts: readonly number[], position: number): { line: number; column: number } {
  let line = 0;
  while (line + 1 < starts.length && starts[line + 1]! <= position) line++;
  return { line: line + 1, column: position - starts[line]! + 1 };
}

// ---- TypeScript 5.x and 6: the JavaScript API, in this process ----

/** The part of the `typescript` module (5.x, 6) this checker uses. */
interface TsFile {
  fileName: string;
  text: string;
}
interface TsChain {
  messageText: string;
  next?: TsChain[];
}
interface TsDiagnostic {
  file: TsFile | undefined;
  start: number | undefined;
  code: number;
  category: number;
  messageText: string | TsChain;
}
interface TsProgram {
  getConfigFileParsingDiagnostics(): readonly TsDiagnostic[];
  getSyntacticDiagnostics(): readonly TsDiagnostic[];
  getOptionsDiagnostics(): readonly TsDiagnostic[];
  getGlobalDiagnostics(): readonly TsDiagnostic[];
  getSemanticDiagnostics(): readonly TsDiagnostic[];
}
interface TsHost {
  getSourceFile(name: string, language: unknown, onError?: unknown): TsFile | undefined;
  fileExists(name: string): boolean;
  readFile(name: string): string | undefined;
  getCurrentDirectory(): string;
  directoryExists?(name: string): boolean;
  getDirectories?(name: string): string[];
  realpath?(name: string): string;
}
export interface TsModule {
  version: string;
  sys: { fileExists(name: string): boolean; readFile(name: string): string | undefined; directoryExists(name: string): boolean };
  DiagnosticCategory: { Error: number };
  parseJsonConfigFileContent(
    json: unknown,
    host: {
      useCaseSensitiveFileNames: boolean;
      readDirectory(): string[];
      fileExists(name: string): boolean;
      readFile(name: string): string | undefined;
    },
    base: string,
  ): { options: object; fileNames: string[]; errors: TsDiagnostic[] };
  createCompilerHost(options: object): TsHost;
  createSourceFile(name: string, text: string, language: unknown, setParents: boolean): TsFile;
  createProgram(options: {
    rootNames: string[];
    options: object;
    host: TsHost;
    oldProgram?: TsProgram;
    configFileParsingDiagnostics?: TsDiagnostic[];
  }): TsProgram;
  sortAndDeduplicateDiagnostics(diagnostics: readonly TsDiagnostic[]): readonly TsDiagnostic[];
  formatDiagnostic(
    diagnostic: TsDiagnostic,
    host: { getCurrentDirectory(): string; getCanonicalFileName(name: string): string; getNewLine(): string },
  ): string;
}

function chainParts(text: string | TsChain): string[] {
  if (typeof text === "string") return [text];
  return [text.messageText, ...(text.next ?? []).flatMap(chainParts)];
}

export function javascriptChecker(ts: TsModule, library: string): Checker {
  const files = new Map<string, string>();
  const parsed = ts.parseJsonConfigFileContent(
    CHECK_CONFIG,
    {
      useCaseSensitiveFileNames: true,
      readDirectory: () => [],
      fileExists: (name) => files.has(name),
      readFile: (name) => files.get(name),
    },
    ROOT,
  );
  const host = ts.createCompilerHost(parsed.options);
  const readFromDisk = host.getSourceFile.bind(host);
  // The library's files are parsed once and shared by every program; the declarations while they stay the same.
  const parsedLibrary = new Map<string, TsFile | undefined>();
  let declarations: TsFile | undefined;
  host.getSourceFile = (name, language, onError) => {
    if (name === CODE) return ts.createSourceFile(name, files.get(CODE)!, language, false);
    if (name === DECLARATIONS) {
      if (declarations?.text !== files.get(DECLARATIONS))
        declarations = ts.createSourceFile(name, files.get(DECLARATIONS)!, language, false);
      return declarations;
    }
    if (!ours(name)) return undefined;
    if (!parsedLibrary.has(name)) parsedLibrary.set(name, readFromDisk(name, language, onError));
    return parsedLibrary.get(name);
  };
  // The disk is asked only about the TypeScript package's own files: any other name is not there.
  const ours = (name: string) => name.startsWith(library);
  host.fileExists = (name) => files.has(name) || (ours(name) && ts.sys.fileExists(name));
  host.readFile = (name) => files.get(name) ?? (ours(name) ? ts.sys.readFile(name) : undefined);
  host.getCurrentDirectory = () => ROOT;
  host.directoryExists = (name) => name === ROOT || (ours(`${name}/`) && ts.sys.directoryExists(name));
  host.getDirectories = () => [];
  host.realpath = (name) => name;
  const formatHost = { getCurrentDirectory: () => ROOT, getCanonicalFileName: (name: string) => name, getNewLine: () => "\n" };
  let previous: TsProgram | undefined;
  return async (declarationText, code) => {
    files.set(DECLARATIONS, declarationText);
    files.set(CODE, code);
    const program = ts.createProgram({
      rootNames: parsed.fileNames,
      options: parsed.options,
      host,
      configFileParsingDiagnostics: parsed.errors,
      ...(previous && { oldProgram: previous }),
    });
    previous = program;
    // What `tsc -p` reports (executeCommandLine's emitFilesAndReportErrors): each kind only when the ones before found nothing.
    const found = [...program.getConfigFileParsingDiagnostics()];
    const configErrors = found.length;
    found.push(...program.getSyntacticDiagnostics());
    if (found.length === configErrors) {
      found.push(...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics());
      if (found.length === configErrors) found.push(...program.getSemanticDiagnostics());
    }
    const errors: BodyError[] = [];
    const other: string[] = [];
    let starts: number[] | undefined;
    for (const diagnostic of ts.sortAndDeduplicateDiagnostics(found)) {
      if (diagnostic.category !== ts.DiagnosticCategory.Error) continue;
      if (diagnostic.file?.fileName === CODE && diagnostic.start !== undefined) {
        starts ??= lineStarts(code);
        errors.push({ ...lineAndColumn(starts, diagnostic.start), code: diagnostic.code, parts: chainParts(diagnostic.messageText) });
      } else {
        other.push(ts.formatDiagnostic(diagnostic, formatHost).trim());
      }
    }
    return { errors, other };
  };
}

// ---- TypeScript 7: the native compiler's API server ----

/** The part of `typescript/unstable/async` (7.x) this checker uses. */
interface NativeDiagnostic {
  fileName?: string | undefined;
  pos: number;
  end: number;
  code: number;
  category: number;
  text: string;
  messageChain?: readonly NativeDiagnostic[] | undefined;
}
interface NativeProgram {
  getConfigFileParsingDiagnostics(): Promise<readonly NativeDiagnostic[]>;
  getSyntacticDiagnostics(): Promise<readonly NativeDiagnostic[]>;
  getProgramDiagnostics(): Promise<readonly NativeDiagnostic[]>;
  getGlobalDiagnostics(): Promise<readonly NativeDiagnostic[]>;
  getSemanticDiagnostics(): Promise<readonly NativeDiagnostic[]>;
}
interface NativeSnapshot {
  getProject(config: string): { program: NativeProgram } | undefined;
  dispose(): Promise<void>;
}
interface NativeApi {
  updateSnapshot(params: { openProjects?: string[]; fileChanges?: { changed: string[] } }): Promise<NativeSnapshot>;
}
export type NativeApiClass = new (options: {
  cwd: string;
  fs: {
    readFile(name: string): string | null | undefined;
    fileExists(name: string): boolean | undefined;
    directoryExists(name: string): boolean | undefined;
    getAccessibleEntries(name: string): { files: string[]; directories: string[] } | undefined;
    realpath(name: string): string | undefined;
  };
}) => NativeApi;

function nativeParts(diagnostic: NativeDiagnostic): string[] {
  return [diagnostic.text, ...(diagnostic.messageChain ?? []).flatMap(nativeParts)];
}

/** An error as `tsc --pretty false` prints it: `file(line,column): error TSn: message`, its chain indented below. */
function formatNative(diagnostic: NativeDiagnostic, files: ReadonlyMap<string, string>): string {
  const chain = (link: NativeDiagnostic, depth: number): string[] => [
    `${"  ".repeat(depth)}${link.text}`,
    ...(link.messageChain ?? []).flatMap((next) => chain(next, depth + 1)),
  ];
  let place = "";
  if (diagnostic.fileName !== undefined) {
    const text = files.get(diagnostic.fileName);
    const name = diagnostic.fileName.startsWith(`${ROOT}/`) ? diagnostic.fileName.slice(ROOT.length + 1) : diagnostic.fileName;
    const at = text === undefined ? undefined : lineAndColumn(lineStarts(text), diagnostic.pos);
    place = at === undefined ? `${name}: ` : `${name}(${at.line},${at.column}): `;
  }
  const [first, ...rest] = chain(diagnostic, 0);
  return [`${place}error TS${diagnostic.code}: ${first}`, ...rest].join("\n");
}

/** DiagnosticCategory.Error, the same in 5.x and 7. */
const ERROR = 1;

export function nativeChecker(Api: NativeApiClass, libraries: readonly string[]): Checker {
  const files = new Map<string, string>([[CONFIG, JSON.stringify(CHECK_CONFIG)]]);
  // Only the project's own three files are served from memory; the library comes from the compiler's package.
  // Anything else does not exist, but the compiler's own package (undefined: the compiler reads it itself).
  const ours = (name: string) => libraries.some((library) => name.startsWith(library));
  const api = new Api({
    cwd: ROOT,
    fs: {
      readFile: (name) => (name.startsWith(`${ROOT}/`) ? (files.get(name) ?? null) : ours(name) ? undefined : null),
      fileExists: (name) => (name.startsWith(`${ROOT}/`) ? files.has(name) : ours(name) ? undefined : false),
      directoryExists: (name) => (name === ROOT || name.startsWith(`${ROOT}/`) ? name === ROOT : ours(`${name}/`) ? undefined : false),
      getAccessibleEntries: (name) =>
        name === ROOT
          ? { files: [...files.keys()].map((file) => file.slice(ROOT.length + 1)), directories: [] }
          : ours(`${name}/`)
            ? undefined
            : { files: [], directories: [] },
      realpath: (name) => (ours(name) ? undefined : name),
    },
  });
  let opened = false;
  return async (declarations, code) => {
    const changed = [CODE];
    if (files.get(DECLARATIONS) !== declarations) changed.push(DECLARATIONS);
    files.set(DECLARATIONS, declarations);
    files.set(CODE, code);
    const snapshot = await api.updateSnapshot(opened ? { fileChanges: { changed } } : { openProjects: [CONFIG] });
    opened = true;
    try {
      const program = snapshot.getProject(CONFIG)?.program;
      if (program === undefined) throw new Error("the TypeScript API server opened no project for the check");
      const found = [...(await program.getConfigFileParsingDiagnostics())];
      const configErrors = found.length;
      found.push(...(await program.getSyntacticDiagnostics()));
      if (found.length === configErrors) {
        found.push(...(await program.getProgramDiagnostics()), ...(await program.getGlobalDiagnostics()));
        if (found.length === configErrors) found.push(...(await program.getSemanticDiagnostics()));
      }
      const errors: BodyError[] = [];
      const other: string[] = [];
      const starts = lineStarts(code);
      const seen = new Set<string>();
      // tsc's order: by file, then position, length, code and message; each error once.
      const sorted = found
        .filter((diagnostic) => diagnostic.category === ERROR)
        .map((diagnostic) => ({ diagnostic, parts: nativeParts(diagnostic) }))
        .sort(
          (a, b) =>
            (a.diagnostic.fileName ?? "").localeCompare(b.diagnostic.fileName ?? "") ||
            a.diagnostic.pos - b.diagnostic.pos ||
            a.diagnostic.end - a.diagnostic.pos - (b.diagnostic.end - b.diagnostic.pos) ||
            a.diagnostic.code - b.diagnostic.code ||
            a.parts.join("\n").localeCompare(b.parts.join("\n")),
        );
      for (const { diagnostic, parts } of sorted) {
        const key = JSON.stringify([diagnostic.fileName, diagnostic.pos, diagnostic.end, diagnostic.code, parts]);
        if (seen.has(key)) continue;
        seen.add(key);
        if (diagnostic.fileName === CODE) errors.push({ ...lineAndColumn(starts, diagnostic.pos), code: diagnostic.code, parts });
        else other.push(formatNative(diagnostic, files));
      }
      return { errors, other };
    } finally {
      await snapshot.dispose();
    }
  };
}

/** The checker for the TypeScript package in `directory`, by its major version. */
export async function loadChecker(directory: string): Promise<Checker> {
  const manifest = JSON.parse(readFileSync(join(directory, "package.json"), "utf8")) as {
    version?: string;
    exports?: Record<string, unknown>;
  };
  const major = Number(String(manifest.version).split(".")[0]);
  const library = `${resolve(directory)}/`;
  if (major < 7) return javascriptChecker(createRequire(join(directory, "package.json"))(directory) as TsModule, library);
  const api = manifest.exports?.["./unstable/async"];
  if (typeof api !== "string")
    throw new Error(`typescript ${manifest.version} offers no API server (typescript/unstable/async), which the warm checker uses`);
  // The native compiler's standard library is next to its executable, in a package of its own.
  const libraries = [library];
  try {
    const where = (await import(pathToFileURL(join(directory, "lib", "getExePath.js")).href)) as { default: () => string };
    libraries.push(`${dirname(where.default())}/`);
  } catch {
    // No getExePath (another layout): the compiler's own package only.
  }
  return nativeChecker(((await import(pathToFileURL(join(directory, api)).href)) as { API: NativeApiClass }).API, libraries);
}
