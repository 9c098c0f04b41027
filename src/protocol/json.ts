/**
 * JSON values that survive a round trip unchanged. JSON.stringify silently rewrites many JavaScript
 * values (NaN becomes null, undefined array items become null, Map becomes {}, Date becomes a string,
 * cycles and BigInt throw), so values are checked before they are encoded and refused with a reason.
 */
import { describeError } from "./errors.js";
import { clip } from "./text.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Deepest nesting of a protocol frame, counting the frame object as level 1 (so `{"a":[1]}` is 2 deep).
 * Readers refuse deeper frames as malformed; see wire/PROTOCOL.md section 1. 512 is far beyond what
 * real data needs, yet small enough that every recursive consumer of a decoded value (JSON.stringify
 * with indentation, deep equality, a user's own walker) stays well inside Node's default stack.
 */
export const MAX_FRAME_DEPTH = 512;

/**
 * Deepest nesting of a value sent inside a frame (`arguments`, `input`, `structured`), counting the
 * value itself as level 1 when it is an array or object, and 0 for a scalar. The deepest place a value
 * sits is `result.outcome.structured` (frame 1, outcome 2), so a value of this depth fits in every frame.
 */
export const MAX_VALUE_DEPTH = MAX_FRAME_DEPTH - 2;

/** Options for {@link jsonProblem}. */
export interface JsonProblemOptions {
  /**
   * Deepest nesting accepted (arrays and objects; a scalar is 0 deep). Default {@link MAX_VALUE_DEPTH}.
   * The check never recurses, so it cannot overflow the stack whatever the limit.
   */
  maxDepth?: number;
}

/**
 * Returns why `value` cannot be sent as JSON without being altered, or `undefined` when it can.
 * The reason names the path, e.g. `$.items[2] is NaN`. Accepted: null, booleans, finite numbers
 * (-0 is sent as 0, which compares equal), strings, dense arrays, and objects whose prototype is
 * Object.prototype or null with no symbol keys and no undefined values, nested at most
 * `options.maxDepth` levels (default {@link MAX_VALUE_DEPTH}, so the value fits in any frame).
 */
export function jsonProblem(value: unknown, options: JsonProblemOptions = {}): string | undefined {
  const maxDepth = options.maxDepth ?? MAX_VALUE_DEPTH;
  const found = scalarProblem(value);
  if (found !== undefined) return `$ ${found}`;
  if (typeof value !== "object" || value === null) return undefined;
  // An explicit stack of open containers (never recursion): a 100,000-deep value cannot overflow it,
  // and the check stops at the first level past maxDepth anyway.
  const stack: Open[] = [];
  const onStack = new Set<object>();
  const open = (object: object): string | undefined => {
    if (onStack.has(object)) return "refers back to one of its ancestors (a cycle)";
    if (stack.length >= maxDepth)
      return `is nested more than ${maxDepth} levels deep, which protocol 1 refuses (the limit keeps every reader's stack safe)`;
    if (Array.isArray(object)) {
      stack.push({ object, keys: undefined, next: 0, size: object.length });
    } else {
      const proto = Object.getPrototypeOf(object);
      if (proto !== Object.prototype && proto !== null) {
        return `is ${kindOf(object)}, which JSON would rewrite; convert it to plain objects, arrays and strings first`;
      }
      if (Object.getOwnPropertySymbols(object).length > 0) return "has symbol keys, which JSON drops";
      const keys: string[] = [];
      for (const key in object) keys.push(key);
      stack.push({ object, keys, next: 0, size: keys.length });
    }
    onStack.add(object);
    return undefined;
  };
  let reason: string | undefined;
  // A getter or a Proxy trap that throws makes the value unreadable: a reason to refuse it like any other,
  // found at the path being read when it threw (jsonProblem answers; it does not throw).
  try {
    reason = open(value);
    while (reason === undefined && stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (top.next >= top.size) {
        stack.pop();
        onStack.delete(top.object);
        continue;
      }
      const at = top.next++;
      let child: unknown;
      if (top.keys === undefined) {
        if (!(at in top.object)) {
          reason = "is a hole in a sparse array, which JSON turns into null";
          break;
        }
        child = (top.object as unknown[])[at];
      } else {
        child = (top.object as Record<string, unknown>)[top.keys[at]!];
      }
      reason = scalarProblem(child);
      if (reason === undefined && typeof child === "object" && child !== null) reason = open(child);
      if (reason !== undefined) break;
    }
  } catch (error) {
    reason = `could not be read (${thrownText(error)}), so it cannot be sent as JSON`;
  }
  if (reason === undefined) return undefined;
  // The path to the offending value: each open container's current key (a refused container is not
  // on the stack; the key that led to it is its parent's `next - 1`).
  const steps = stack.map((level) => {
    const index = level.next - 1;
    const key = level.keys === undefined ? index : level.keys[index]!;
    return pathStep(key);
  });
  // A path hundreds of levels long says no more than its ends and how many levels lie between.
  const path =
    steps.length <= 24 ? steps.join("") : `${steps.slice(0, 12).join("")}…(${steps.length - 20} levels)…${steps.slice(-8).join("")}`;
  return `$${path} ${reason}`;
}

/** What a getter or trap threw, cut short; never throws itself (an error's own getters may). */
function thrownText(error: unknown): string {
  try {
    return clip(describeError(error), 200);
  } catch {
    return "reading it threw";
  }
}

/** "a Map", "an Object", or "an object" when the value's constructor has no usable name. */
function kindOf(object: object): string {
  const name: unknown = (object as { constructor?: { name?: unknown } }).constructor?.name;
  if (typeof name !== "string" || !/^[A-Za-z_$][\w$]*$/.test(name)) return "an object";
  return /^[AEIOaeio]/.test(name) ? `an ${name}` : `a ${name}`;
}

/** An array or object being checked: its keys (undefined for an array) and the next index to visit. */
interface Open {
  object: object;
  keys: string[] | undefined;
  next: number;
  size: number;
}

/** Why a non-container value cannot be sent as JSON unchanged, or undefined (also for containers). */
function scalarProblem(value: unknown): string | undefined {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) ? undefined : `is ${value}, which JSON cannot represent`;
    case "undefined":
      return "is undefined, which JSON drops or turns into null; omit the key or use null";
    case "bigint":
      return "is a BigInt, which JSON cannot represent; convert it to a string or number first";
    case "function":
      return "is a function, which JSON cannot represent";
    case "symbol":
      return "is a symbol, which JSON cannot represent";
    default:
      return undefined;
  }
}

/** One step of a JSON path as messages show it: `[3]`, `.name`, or `["odd key"]`. */
export function pathStep(key: string | number): string {
  return typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Where two JSON values first differ: the path (`""` for the values themselves) and both values there. */
export interface JsonDifference {
  path: string;
  a: Json | undefined;
  b: Json | undefined;
}

/**
 * The first place where two JSON values differ, or `undefined` when they are equal (object keys compare
 * as sets, in any order; an absent key differs from any value). Used for `Outcome.equal` and by replay.
 */
export function jsonDifference(a: Json | undefined, b: Json | undefined, path = ""): JsonDifference | undefined {
  if (a === b) return undefined;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b))
    return { path, a, b };
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const found = jsonDifference(a[i], b[i], path + pathStep(i));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const x = a as { [key: string]: Json };
  const y = b as { [key: string]: Json };
  for (const key of new Set([...Object.keys(x), ...Object.keys(y)])) {
    const found = jsonDifference(
      Object.hasOwn(x, key) ? x[key] : undefined,
      Object.hasOwn(y, key) ? y[key] : undefined,
      path + pathStep(key),
    );
    if (found !== undefined) return found;
  }
  return undefined;
}
