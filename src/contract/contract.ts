/**
 * Typed capability contracts: one declaration, shared by a guest and its host, of what each capability
 * takes and returns, written with any Standard Schema library (zod 4, valibot, arktype, ...). The runtime
 * only ever calls `schema["~standard"].validate` (and `~standard.jsonSchema` in `describe()`), so this
 * module imports no schema library: a guest that passes no schema loads none.
 */
import { clip } from "../protocol/text.js";
import { declarationsOf, type DeclarationOptions } from "./declarations.js";
import type { Json } from "../protocol/json.js";
import { FailureCode, isMadeOutcome, Outcome, type Failure } from "../protocol/outcome.js";

/** What a capability handler receives besides its arguments. */
export interface CapabilityContext {
  /** The capability name the guest called. */
  name: string;
  /** The guest's request id (unique in the run). */
  id: number;
  /**
   * Aborted when the answer is no longer wanted: the call's deadline passed (reason: a `TimeoutError`
   * DOMException), or the run ended (reason: an `AbortError` DOMException). Pass it on to `fetch`, child
   * processes, etc.; a handler that ignores it keeps running, but its late answer is dropped.
   */
  signal: AbortSignal;
}

/**
 * A capability handler. It returns (or resolves to) an Outcome made with `Outcome.success/failure`, a
 * string (success with that content), `undefined` (success with content ""), or any other JSON value
 * (success, `structured` = the value). A value JSON would alter is refused with a `CapabilityFailed`
 * reply that says why; a throw becomes a `CapabilityFailed` reply whose content is the error message.
 * A plain object shaped like an outcome is JSON like any other: build outcomes with the helpers.
 */
export type Capability = (args: Json, ctx: CapabilityContext) => unknown;

/** Handlers by capability name. */
export type Capabilities = Record<string, Capability>;

/**
 * The Standard Schema v1 interface (https://standardschema.dev), declared here so that the package
 * depends on no schema library. zod 4, valibot >= 1 and arktype >= 2 schemas satisfy it.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaProps<Input, Output>;
}

/** The `~standard` properties of a {@link StandardSchemaV1}. */
export interface StandardSchemaProps<Input = unknown, Output = Input> {
  readonly version: 1;
  readonly vendor: string;
  readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  /** Standard JSON Schema (optional): zod 4 provides it; `describe()` needs it. */
  readonly jsonSchema?: {
    readonly input: (options: { readonly target: string }) => Record<string, unknown>;
    readonly output: (options: { readonly target: string }) => Record<string, unknown>;
  };
}

/** What a Standard Schema's `validate` returns. */
export type StandardResult<Output> =
  { readonly value: Output; readonly issues?: undefined } | { readonly issues: ReadonlyArray<StandardIssue> };

/** One validation issue. */
export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** The type a schema accepts. */
export type InferInput<S extends StandardSchemaV1> = NonNullable<S["~standard"]["types"]>["input"];
/** The type a schema produces after validation (after its transforms, if any). */
export type InferOutput<S extends StandardSchemaV1> = NonNullable<S["~standard"]["types"]>["output"];

/** One capability in a contract. Every field is optional: a capability without schemas is as loose as an untyped call. */
export interface CapabilitySpec {
  /** Shown to a model by {@link Contract.describe}. */
  readonly description?: string;
  /** What the capability takes: checked by the guest before sending and by the host before its handler runs. */
  readonly arguments?: StandardSchemaV1;
  /** The `structured` value of its success: checked by the host after its handler and by the guest before the program sees it. */
  readonly structured?: StandardSchemaV1;
  /**
   * Added: a call needs approval before its handler runs (docs/approvals.md): `true`, or a predicate over
   * the arguments as the body sent them (before the `arguments` schema checks them). A predicate that
   * throws, or returns anything but `false`, means "needs approval". `implement` carries it onto the handler.
   */
  readonly requiresApproval?: boolean | ((args: Json) => boolean);
}

/** Capability specs by name. */
export type CapabilitySpecs = { readonly [name: string]: CapabilitySpec };

/** The specs an untyped guest has: any name, any JSON arguments, any outcome. */
// `{}` is "any value but null and undefined", the loosest spec there is (`object` would refuse strings).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export type LooseSpecs = { readonly [name: string]: {} };

/** Values JSON.stringify would drop, rewrite or throw on, as far as a type can tell. */
export type NotJson =
  | ((...args: never[]) => unknown)
  | symbol
  | bigint
  | Map<unknown, unknown>
  | Set<unknown>
  | WeakMap<object, unknown>
  | WeakSet<object>
  | Date
  | RegExp
  | Promise<unknown>;

/**
 * `T` with every part JSON would alter replaced by `never` (so `T` is assignable to `JsonSafe<T>` exactly
 * when TypeScript can see nothing JSON would alter). Types already assignable to {@link Json} are kept as
 * they are; interfaces and type aliases are walked member by member.
 */
export type JsonSafe<T> = T extends Json ? T : T extends NotJson ? never : T extends object ? { [K in keyof T]: JsonSafe<T[K]> } : T;

/**
 * The names of `Specs` whose spec has an `arguments` schema: `ears.call` requires those arguments. Only
 * names the type spells out: an index signature (`${server}.${string}`, `string`: names known at run time)
 * has no schema to require, and would swallow the literal names it matches if they were taken as a union.
 */
// `{} extends { [Key in Name]: unknown }` holds exactly for an index signature's key (no property is required).
// The `& keyof Specs` lets TypeScript 5 see a name of these as a key of Specs (7 sees it unaided).
export type NamesWithArguments<Specs> = keyof {
  [
    Name in keyof Specs as Name extends string
      ? // eslint-disable-next-line @typescript-eslint/no-empty-object-type
        {} extends { [Key in Name]: unknown }
        ? never
        : Specs[Name] extends { readonly arguments: StandardSchemaV1 }
          ? Name
          : never
      : never
  ]: 0;
} &
  keyof Specs &
  string;

/** The other names (every name of an untyped handle): their arguments are any JSON. */
export type NamesWithoutArguments<Specs> = Exclude<keyof Specs & string, NamesWithArguments<Specs>>;

/** The input type of a spec's `arguments` schema. */
export type ArgumentsOf<Spec> = Spec extends { readonly arguments: infer A extends StandardSchemaV1 } ? InferInput<A> : never;

/**
 * What follows untyped arguments in `ears.call`: the options, or, when the arguments' type shows a value
 * JSON would alter (function, symbol, bigint, `Map`, `Set`, `Date`, ...), a required third argument whose
 * type is the explanation, so the call does not compile.
 */
export type JsonArgumentRest<A, Options> = [A] extends [JsonSafe<A>]
  ? [options?: Options]
  : [options: Options | undefined, error: "the arguments hold a value JSON would alter (function, symbol, bigint, Map, Set, Date, ...)"];

/**
 * What follows the arguments of a name called through the untyped overload of `ears.call`: as
 * {@link JsonArgumentRest}, except for a name whose spec types its arguments (a name a pattern of names
 * known at run time, such as `${server}.${string}`, also matches): arguments that did not fit the typed
 * overload must not pass here, so a required third argument explains it and the call does not compile.
 */
export type UntypedCallRest<Specs, Name, Args, Options> = [Name] extends [NamesWithArguments<Specs>]
  ? [options: Options | undefined, error: "the arguments do not match this capability's arguments schema"]
  : JsonArgumentRest<Args, Options>;

/** A success whose `structured` has been checked against the contract. */
export interface TypedSuccess<T> {
  readonly status: "success";
  readonly content: string;
  readonly structured: T;
}

/** What `ears.call` resolves to for one spec. */
export type CallResult<Spec> = Spec extends { readonly structured: infer S extends StandardSchemaV1 }
  ? TypedSuccess<InferOutput<S>> | Failure
  : Outcome;

type Awaitable<T> = T | PromiseLike<T>;

/** The handler the host writes for one spec: gets the checked arguments, answers as a `Capability` does. */
export type Handler<Spec> = (
  args: Spec extends { readonly arguments: infer A extends StandardSchemaV1 } ? InferOutput<A> : Json,
  ctx: CapabilityContext,
) => Spec extends { readonly structured: infer S extends StandardSchemaV1 } ? Awaitable<InferInput<S> | Outcome> : unknown;

/** One handler for every capability the contract declares. */
export type Handlers<Specs extends CapabilitySpecs> = { readonly [Name in keyof Specs]: Handler<Specs[Name]> };

/** One capability as a model sees it: JSON Schema for its arguments and, when declared, its `structured`. */
export interface CapabilityDescription {
  name: string;
  description?: string;
  /** JSON Schema (draft 2020-12) of the arguments; `{}` (anything) when the contract has no `arguments` schema. */
  inputSchema: Record<string, unknown>;
  /** JSON Schema (draft 2020-12) of the success's `structured`, when the contract declares one. */
  outputSchema?: Record<string, unknown>;
}

/** A typed capability contract, made by {@link defineCapabilities}; pass it to `serve({ capabilities })` and implement it on the host. */
export interface Contract<Specs extends CapabilitySpecs = CapabilitySpecs> {
  /** The specs as declared. */
  readonly specs: Readonly<Specs>;
  /** The capability names, in declaration order. */
  readonly names: readonly (keyof Specs & string)[];
  /**
   * The host side: wraps one handler per capability into `capabilities` for `runGuest`/`runHost`. Each
   * wrapped handler checks the guest's arguments first (a mismatch is answered `InvalidArguments` and the
   * handler does not run), passes the schema's output to the handler, and checks the `structured` of a
   * success against the contract (a mismatch is answered `CapabilityFailed`). `allowed` then defaults to
   * exactly the contract's names. Throws a TypeError when a handler is missing or not a function.
   */
  implement(handlers: Handlers<Specs>): Capabilities;
  /**
   * JSON Schema of every capability, for prompting a model. Uses each schema's Standard JSON Schema
   * (`~standard.jsonSchema`, which zod 4 provides); throws a TypeError naming the capability whose schema
   * library has none.
   */
  describe(): CapabilityDescription[];
  /**
   * Ambient TypeScript declarations of what a code body has in scope (`declare const ears`, `input`,
   * `Outcome`), for a model's prompt and for `runCode({ typecheck: true })`: one generic `ears.call` over an
   * interface `Capabilities` with an entry per capability, its argument and `structured` types (from the
   * schemas' Standard JSON Schema) and its description as a doc comment (docs/code.md says why one generic
   * call, not an overload per capability). Arguments are optional where every property is (`z.object({})`).
   * `options.input` types `input` (default: any JSON);
   * `options.allowed` declares only the capabilities the run allows (default: all of them). Throws a
   * TypeError naming a schema whose library has no Standard JSON Schema, or an allowed name the contract
   * does not declare.
   */
  declarations(options?: DeclarationOptions): string;
}

const contracts = new WeakSet<object>();

/**
 * Declares the capabilities a guest calls and a host implements, with a Standard Schema for each one's
 * arguments and (optionally) its success's `structured`. Throws a TypeError when a spec is malformed.
 *
 * @example
 * const tools = defineCapabilities({
 *   add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
 * });
 */
export function defineCapabilities<const Specs extends CapabilitySpecs>(specs: Specs): Contract<Specs> {
  if (typeof specs !== "object" || specs === null || Array.isArray(specs)) {
    throw new TypeError("defineCapabilities: expected an object of capability specs by name");
  }
  const own: Record<string, CapabilitySpec> = Object.create(null);
  for (const [name, spec] of Object.entries(specs)) {
    if (typeof spec !== "object" || spec === null) throw new TypeError(`defineCapabilities: ${JSON.stringify(name)} must be an object`);
    if (spec.description !== undefined && typeof spec.description !== "string") {
      throw new TypeError(`defineCapabilities: ${JSON.stringify(name)}.description must be a string`);
    }
    if (spec.requiresApproval !== undefined && typeof spec.requiresApproval !== "boolean" && typeof spec.requiresApproval !== "function") {
      throw new TypeError(`defineCapabilities: ${JSON.stringify(name)}.requiresApproval must be a boolean or a function (args) => boolean`);
    }
    for (const field of ["arguments", "structured"] as const) {
      if (spec[field] !== undefined && !isStandardSchema(spec[field])) {
        throw new TypeError(
          `defineCapabilities: ${JSON.stringify(name)}.${field} must be a Standard Schema ` +
            "(an object with ~standard.validate), e.g. a zod 4 schema",
        );
      }
    }
    own[name] = spec;
  }
  const names = Object.freeze(Object.keys(own)) as readonly (keyof Specs & string)[];
  const contract: Contract<Specs> = {
    specs: Object.freeze({ ...specs }),
    names,
    implement: (handlers) => implement(own, handlers as Record<string, unknown>),
    describe: () => describe(own),
    declarations: (options) => declarationsOf(own, options),
  };
  contracts.add(contract);
  return Object.freeze(contract);
}

/** True for a contract made by {@link defineCapabilities}. */
export function isContract(value: unknown): value is Contract {
  return typeof value === "object" && value !== null && contracts.has(value);
}

/** The spec of `name` in a contract, or `undefined` when the contract does not declare it. */
export function specOf(contract: Contract, name: string): CapabilitySpec | undefined {
  return Object.hasOwn(contract.specs, name) ? contract.specs[name] : undefined;
}

function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  const standard = (value as { "~standard"?: { validate?: unknown } })["~standard"];
  return typeof standard === "object" && standard !== null && typeof standard.validate === "function";
}

/** A schema check's verdict: the schema's output, or a sentence listing the issues. */
export type Checked = { ok: true; value: unknown } | { ok: false; problem: string };

/**
 * Validates `value` with `schema`. Synchronous when the schema is (so an untyped or sync-checked call
 * keeps its order on the wire); a promise when the schema validates asynchronously.
 */
export function check(schema: StandardSchemaV1, value: unknown): Checked | Promise<Checked> {
  const result: unknown = schema["~standard"].validate(value);
  // Any thenable, not only this realm's Promise: read synchronously, a pending result has no `issues`
  // and would pass as valid.
  if (typeof (result as PromiseLike<unknown> | null)?.then === "function") return Promise.resolve(result).then(verdict);
  return verdict(result);
}

/**
 * Checks a call's arguments with `schema`. A call without arguments (`ears.call(name)`: null on the wire)
 * to a capability whose schema refuses null but takes an empty object (`z.object({})`, or an object whose
 * every property is optional) is checked, and handled, as a call with `{}`: "no arguments" to a tool that
 * takes an object means none of its properties (docs/code.md, "What a body is"). Anything else as `check`.
 */
export function checkArguments(schema: StandardSchemaV1, value: unknown): Checked | Promise<Checked> {
  const given = check(schema, value);
  if (value !== null) return given;
  const orEmpty = (checked: Checked): Checked | Promise<Checked> => {
    if (checked.ok) return checked;
    const empty = check(schema, {});
    const pick = (verdict: Checked): Checked => (verdict.ok ? verdict : checked);
    return empty instanceof Promise ? empty.then(pick) : pick(empty);
  };
  return given instanceof Promise ? given.then(orEmpty) : orEmpty(given);
}

const MAX_ISSUES = 5;
const MAX_PROBLEM_CHARS = 1000;
const MAX_PART_CHARS = 200;

function verdict(result: unknown): Checked {
  if (typeof result !== "object" || result === null) {
    throw new TypeError(`a Standard Schema's validate returned ${result === null ? "null" : typeof result}, not a result object`);
  }
  const { issues, value } = result as { issues?: unknown; value?: unknown };
  if (issues === undefined) return { ok: true, value };
  if (!Array.isArray(issues)) throw new TypeError("a Standard Schema's validate returned issues that are not an array");
  return refused(issues as readonly StandardIssue[]);
}

function refused(issues: readonly StandardIssue[]): Checked {
  const shown = issues.slice(0, MAX_ISSUES).map((issue) => `${issuePath(issue)}: ${bounded(String(issue?.message), MAX_PART_CHARS)}`);
  if (issues.length > MAX_ISSUES) shown.push(`and ${issues.length - MAX_ISSUES} more`);
  let problem = shown.join("; ");
  // Keys in a path come from the other side, which may be hostile: the sentence stays bounded.
  problem = clip(problem, MAX_PROBLEM_CHARS);
  return { ok: false, problem: problem === "" ? "the schema rejected it" : problem };
}

function issuePath(issue: StandardIssue): string {
  let path = "$";
  const segments = Array.isArray(issue?.path) ? issue.path : [];
  for (const segment of segments) {
    const key: unknown = typeof segment === "object" && segment !== null ? segment.key : segment;
    if (typeof key === "number") path += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)) path += `.${bounded(key, MAX_PART_CHARS)}`;
    else path += `[${typeof key === "string" ? JSON.stringify(bounded(key, MAX_PART_CHARS)) : String(key)}]`;
    if (path.length > MAX_PROBLEM_CHARS) break;
  }
  return path;
}

/** Cuts a part of a problem sentence that came from the other side (a key, a schema's message). */
function bounded(text: string, max: number): string {
  return clip(text, max);
}

function implement(specs: Record<string, CapabilitySpec>, handlers: Record<string, unknown>): Capabilities {
  if (typeof handlers !== "object" || handlers === null)
    throw new TypeError("implement: expected an object of handlers by capability name");
  const missing = Object.keys(specs).filter((name) => !Object.hasOwn(handlers, name) || typeof handlers[name] !== "function");
  if (missing.length > 0) throw new TypeError(`implement: no handler function for ${missing.map((n) => JSON.stringify(n)).join(", ")}`);
  const extra = Object.keys(handlers).filter((name) => !Object.hasOwn(specs, name));
  if (extra.length > 0) throw new TypeError(`implement: ${extra.map((n) => JSON.stringify(n)).join(", ")} not declared in the contract`);
  // No prototype: a capability may be called "__proto__" or "constructor" like any other name.
  const capabilities: Capabilities = Object.create(null);
  for (const [name, spec] of Object.entries(specs)) {
    const handler = checkedHandler(name, spec, handlers[name] as (args: unknown, ctx: CapabilityContext) => unknown);
    // The host reads the rule off the handler, as for a plain map's `requireApproval(handler)`.
    capabilities[name] =
      spec.requiresApproval === undefined ? handler : Object.assign(handler, { requiresApproval: spec.requiresApproval });
  }
  return capabilities;
}

function checkedHandler(name: string, spec: CapabilitySpec, handler: (args: unknown, ctx: CapabilityContext) => unknown) {
  const { arguments: argumentsSchema, structured: structuredSchema } = spec;
  return async (args: Json, ctx: CapabilityContext): Promise<unknown> => {
    let value: unknown = args;
    if (argumentsSchema !== undefined) {
      const checking = checkArguments(argumentsSchema, args);
      const checked = await checking;
      // A slow asynchronous check can outlast the call: its answer is no longer wanted, so the handler
      // does not start (the signal is read only then, since reading it makes its AbortController).
      if (checking instanceof Promise && ctx.signal.aborted) throw ctx.signal.reason;
      if (!checked.ok) {
        return Outcome.failure(
          FailureCode.InvalidArguments,
          `arguments for "${name}" do not match the contract: ${checked.problem}; the handler did not run`,
        );
      }
      value = checked.value;
    }
    const answer = await handler(value, ctx);
    if (structuredSchema === undefined) return answer;
    if (isMadeOutcome(answer) && answer.status === "failure") return answer;
    // The same reading of an answer as the host's: an outcome as it is, a string or undefined is a
    // success without structured, any other value is the structured itself.
    const structured = isMadeOutcome(answer) ? answer.structured : typeof answer === "string" || answer === undefined ? undefined : answer;
    const checked = await check(structuredSchema, structured);
    if (!checked.ok) {
      return Outcome.failure(
        "CapabilityFailed",
        `the handler for "${name}" answered a structured value that does not match the contract: ${checked.problem}; it was not sent`,
      );
    }
    // The wire carries the handler's own value (checked, never rewritten); the guest reads it through the schema.
    return answer;
  };
}

function describe(specs: Record<string, CapabilitySpec>): CapabilityDescription[] {
  return Object.entries(specs).map(([name, spec]) => {
    const description: CapabilityDescription = { name, inputSchema: {} };
    if (spec.description !== undefined) description.description = spec.description;
    if (spec.arguments !== undefined) description.inputSchema = jsonSchemaOf(name, "arguments", spec.arguments, "input");
    if (spec.structured !== undefined) description.outputSchema = jsonSchemaOf(name, "structured", spec.structured, "output");
    return description;
  });
}

function jsonSchemaOf(name: string, field: string, schema: StandardSchemaV1, side: "input" | "output"): Record<string, unknown> {
  const standard = schema["~standard"];
  const convert = standard.jsonSchema?.[side];
  if (typeof convert !== "function") {
    throw new TypeError(
      `describe: ${JSON.stringify(name)}.${field} is a ${String(standard.vendor)} schema without Standard JSON Schema ` +
        "(~standard.jsonSchema); use a library version that provides it (zod 4 does)",
    );
  }
  return convert.call(standard.jsonSchema, { target: "draft-2020-12" });
}

/** The failure a guest's call resolves to when the host's success contradicts the contract. */
export function replyMismatch(name: string, problem: string): Failure {
  return Outcome.failure(
    FailureCode.InvalidReply,
    `the host's reply to "${name}" does not match the contract's structured schema: ${problem}; the request did execute on the host`,
  );
}
