/**
 * JSON values that survive a round trip unchanged. JSON.stringify silently rewrites many JavaScript
 * values (NaN becomes null, undefined array items become null, Map becomes {}, Date becomes a string,
 * cycles and BigInt throw), so values are checked before they are encoded and refused with a reason.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Returns why `value` cannot be sent as JSON without being altered, or `undefined` when it can.
 * The reason names the path, e.g. `$.items[2] is NaN`. Accepted: null, booleans, finite numbers
 * (-0 is sent as 0, which compares equal), strings, dense arrays, and objects whose prototype is
 * Object.prototype or null with no symbol keys and no undefined values.
 */
export function jsonProblem(value: unknown): string | undefined {
  const problem = check(value, []);
  if (problem === undefined) return undefined;
  let path = "$";
  for (let i = problem.at.length - 1; i >= 0; i--) {
    const key = problem.at[i]!;
    path += typeof key === "number" ? `[${key}]` : /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return `${path} ${problem.reason}`;
}

/** Where a problem was found (keys innermost first, filled in while unwinding) and what it is. */
interface Problem {
  at: (string | number)[];
  reason: string;
}

function check(value: unknown, ancestors: object[]): Problem | undefined {
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : problem(`is ${value}, which JSON cannot represent`);
    case "undefined":
      return problem("is undefined, which JSON drops or turns into null; omit the key or use null");
    case "bigint":
      return problem("is a BigInt, which JSON cannot represent; convert it to a string or number first");
    case "function":
      return problem("is a function, which JSON cannot represent");
    case "symbol":
      return problem("is a symbol, which JSON cannot represent");
  }
  if (value === null) return undefined;
  const object = value as object;
  if (ancestors.includes(object)) return problem("refers back to one of its ancestors (a cycle)");
  if (Array.isArray(object)) {
    ancestors.push(object);
    for (let i = 0; i < object.length; i++) {
      const found = i in object ? check(object[i], ancestors) : problem("is a hole in a sparse array, which JSON turns into null");
      if (found !== undefined) {
        found.at.push(i);
        return found;
      }
    }
    ancestors.pop();
    return undefined;
  }
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (object as { constructor?: { name?: string } }).constructor?.name ?? "object";
    return problem(`is a ${kind}, which JSON would rewrite; convert it to plain objects, arrays and strings first`);
  }
  if (Object.getOwnPropertySymbols(object).length > 0) return problem("has symbol keys, which JSON drops");
  ancestors.push(object);
  for (const key in object) {
    const found = check((object as Record<string, unknown>)[key], ancestors);
    if (found !== undefined) {
      found.at.push(key);
      return found;
    }
  }
  ancestors.pop();
  return undefined;
}

function problem(reason: string): Problem {
  return { at: [], reason };
}
