// jsonProblem names the kind of a non-plain object from its constructor; an object whose prototype chain
// has no usable `constructor` must still get a reason (not a TypeError from reading `.name` of nothing).
import { describe, expect, it } from "vitest";
import { jsonProblem } from "../../src/protocol/json.js";
import { Ears } from "../../src/guest/ears.js";
import { createLinkedPair } from "../../src/wires/memory.js";

/** An instance of a class whose prototype lost its `constructor` (it then inherits Object's). */
function orphanInstance(): object {
  class Orphan {
    readonly x = 1;
  }
  delete (Orphan.prototype as { constructor?: unknown }).constructor;
  return new Orphan();
}

describe("jsonProblem on objects without a usable constructor", () => {
  it.each<[string, () => unknown, string]>([
    ["a prototype that is a null-prototype object", () => Object.create(Object.create(null)), "$ is an object"],
    ["a prototype whose constructor is undefined", () => Object.create({ constructor: undefined }), "$ is an object"],
    ["a prototype whose constructor is null", () => Object.create({ constructor: null }), "$ is an object"],
    ["a prototype whose constructor is a number", () => Object.create({ constructor: 42 }), "$ is an object"],
    ["a class instance whose prototype lost its constructor", orphanInstance, "$ is an Object"],
    ["one nested in an array in an object", () => ({ a: [1, Object.create(Object.create(null))] }), "$.a[1] is an object"],
  ])("%s gets a reason, not a TypeError", (_what, make, start) => {
    const value = make();
    let reason: string | undefined;
    expect(() => (reason = jsonProblem(value))).not.toThrow();
    const escaped = start.replace(/[$.[\]]/g, "\\$&");
    expect(reason).toMatch(new RegExp(`^${escaped}, which JSON would rewrite; convert it to plain objects, arrays and strings first$`));
  });

  it("such an object as call arguments is refused locally as InvalidArguments, nothing sent", async () => {
    const [guestEnd, hostEnd] = createLinkedPair();
    const ears = Ears.open(guestEnd, ["read"]);
    const outcome = await ears.call("read", { path: Object.create(Object.create(null)) });
    expect(outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
    expect(outcome.content).toMatch(
      /^arguments for "read" cannot be sent as JSON unchanged: \$\.path is an object, which JSON would rewrite; convert it to plain objects, arrays and strings first; nothing was sent$/,
    );
    ears.close();
    await guestEnd.end();
    expect(await hostEnd.receive()).toBeUndefined();
  });
});

describe("jsonProblem names the kind with its article", () => {
  it.each<[string, unknown, string]>([
    ["a vowel-initial class", new (class Item {})(), "$ is an Item"],
    ["a consonant-initial class", new Map(), "$ is a Map"],
    ["an anonymous class", new (class {})(), "$ is an object"],
    ["a constructor whose name is not an identifier", Object.create({ constructor: { name: "a b" } }), "$ is an object"],
    ["a constructor whose name is not a string", Object.create({ constructor: { name: 7 } }), "$ is an object"],
  ])("%s", (_what, value, start) => {
    expect(jsonProblem(value)).toBe(`${start}, which JSON would rewrite; convert it to plain objects, arrays and strings first`);
  });
});

describe("jsonProblem on values that throw when read", () => {
  const unreadable = (path: string, why: string) => `${path} could not be read (${why}), so it cannot be sent as JSON`;
  const getterThrows = {
    a: 1,
    get b(): never {
      throw new Error("no b for you");
    },
  };
  const trapThrows = new Proxy(
    {},
    {
      getPrototypeOf: () => {
        throw new Error("trap");
      },
    },
  );
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const messageThrows = {
    get n(): never {
      throw Object.defineProperty(new Error(), "message", {
        get: () => {
          throw new Error("again");
        },
      });
    },
  };
  it.each<[string, unknown, string]>([
    ["a getter that throws", { x: [getterThrows] }, unreadable("$.x[0].b", "no b for you")],
    ["a Proxy whose getPrototypeOf trap throws", { p: trapThrows }, unreadable("$.p", "trap")],
    ["a revoked Proxy", [revoked.proxy], unreadable("$[0]", "Cannot perform 'IsArray' on a proxy that has been revoked")],
    ["a thrown error whose message getter throws too", messageThrows, unreadable("$.n", "reading it threw")],
    [
      "a thrown string, cut at 200 characters",
      {
        get s(): never {
          throw "x".repeat(500);
        },
      },
      unreadable("$.s", `${"x".repeat(200)}…`),
    ],
  ])("%s is refused with a reason at its path; jsonProblem does not throw", (_what, value, reason) => {
    expect(jsonProblem(value)).toBe(reason);
  });
});

describe("jsonProblem on a BigInt", () => {
  it("gives the BigInt advice (convert to a string or number), not the generic non-plain-object one", () => {
    expect(jsonProblem(10n)).toBe("$ is a BigInt, which JSON cannot represent; convert it to a string or number first");
    expect(jsonProblem({ n: [1, 2n] })).toBe("$.n[1] is a BigInt, which JSON cannot represent; convert it to a string or number first");
  });
});
