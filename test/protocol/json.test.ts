// The faithful-JSON policy: values JSON.stringify would alter are refused with a reason and a path.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonProblem } from "../../src/protocol/json.js";
import { jsonValue } from "../../src/testing/arbitraries.js";

describe("jsonProblem", () => {
  it("accepts every faithful JSON value", () => {
    fc.assert(
      fc.property(jsonValue(), (value) => {
        expect(jsonProblem(value)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("accepts null-prototype objects, -0 (equal to the 0 it becomes) and shared, non-cyclic references", () => {
    const shared = { a: 1 };
    expect(jsonProblem(Object.assign(Object.create(null), { a: 1 }))).toBeUndefined();
    expect(jsonProblem(-0)).toBeUndefined();
    expect(jsonProblem([shared, { again: shared }])).toBeUndefined();
  });

  class Point {
    constructor(readonly x: number) {}
  }
  const cycle: Record<string, unknown> = { items: [] };
  (cycle.items as unknown[]).push({ back: cycle });
  // eslint-disable-next-line no-sparse-arrays -- the hole is the input under test
  const sparse = [1, , 3];
  const cases: [string, unknown, RegExp][] = [
    ["BigInt", { n: 10n }, /^\$\.n is a BigInt/],
    ["cycle", cycle, /^\$\.items\[0\]\.back refers back to one of its ancestors/],
    ["NaN", [1, Number.NaN], /^\$\[1\] is NaN/],
    ["Infinity", { x: -Infinity }, /^\$\.x is -Infinity/],
    ["undefined in an array", [undefined], /^\$\[0\] is undefined/],
    ["undefined in an object", { a: undefined }, /^\$\.a is undefined/],
    ["a function", { f() {} }, /^\$\.f is a function/],
    ["a symbol", Symbol("s"), /^\$ is a symbol/],
    ["a sparse array", sparse, /^\$\[1\] is a hole in a sparse array/],
    ["a Map", new Map([[1, 2]]), /^\$ is a Map/],
    ["a Date", { when: new Date(0) }, /^\$\.when is a Date/],
    ["a class instance", new Point(1), /^\$ is a Point/],
    ["symbol keys", { [Symbol("k")]: 1 }, /^\$ has symbol keys/],
    ["an odd key", { "a b": [1n] }, /^\$\["a b"\]\[0\] is a BigInt/],
  ];
  it.each(cases)("refuses %s, naming where it is", (_name, value, reason) => {
    expect(jsonProblem(value)).toMatch(reason);
  });
});
