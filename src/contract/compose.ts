/**
 * composeContracts: one contract from several (the user's own, `connectMcpServers(...).contract`, a
 * `{ fetch: FETCH_SPEC }` record), so `declarations()`, `typecheck: true` and `implement` see every
 * capability a run offers. A spread of `specs` lost the names' types and needed a cast.
 */
import { defineCapabilities, isContract, type CapabilitySpecs, type Contract } from "./contract.js";

/** A part of {@link composeContracts}: a contract, or specs by name (as `defineCapabilities` takes them). */
export type ContractPart = Contract<CapabilitySpecs> | CapabilitySpecs;

type SpecsOfPart<Part> = Part extends Contract<infer Specs> ? Specs : Part;
type Intersection<Union> = (Union extends unknown ? (part: Union) => void : never) extends (part: infer All) => void ? All : never;

/**
 * The specs of every part, each name with its own spec type. A part whose names are known only at run
 * time keeps the index signature its type has: `${server}.${string}` for `connectMcpServers(...).contract`,
 * `string` for a part typed as plain `Contract`. Those names stay callable (any JSON arguments, an
 * `Outcome` back), and the names a type spells out keep their argument and result types beside them.
 */
type Merged<Parts extends readonly ContractPart[]> = Intersection<SpecsOfPart<Parts[number]>>;
// Mapped with `as`, so each name and each index signature is kept on its own: `keyof` of the merge would be
// one union, where `string` (or `${server}.${string}`) swallows the literal names it matches.
export type ComposedSpecs<Parts extends readonly ContractPart[]> = {
  readonly [Name in keyof Merged<Parts> as Name extends string ? Name : never]: Merged<Parts>[Name] & CapabilitySpecs[string];
};

/**
 * One contract holding the capabilities of every part, in the parts' order: contracts (the user's own,
 * `connectMcpServers(...).contract`) and records of specs (`{ fetch: FETCH_SPEC }`). Each typed name keeps
 * its types (see {@link ComposedSpecs}), with no cast: `ears.call("add", …)` stays typed. Throws a TypeError
 * naming a capability two parts declare (decision: refused, never one silently replacing the other),
 * or a part that is neither a contract nor an object of specs.
 *
 * @example
 * const contract = composeContracts(tools, servers.contract, { fetch: FETCH_SPEC });
 * const report = await runCode({ code, contract, typecheck: true, capabilities: { ...mine, ...servers.capabilities, fetch } });
 */
export function composeContracts<const Parts extends readonly ContractPart[]>(...parts: Parts): Contract<ComposedSpecs<Parts>> {
  const specs: Record<string, CapabilitySpecs[string]> = Object.create(null);
  const from: Record<string, number> = Object.create(null);
  parts.forEach((part, index) => {
    if (typeof part !== "object" || part === null || Array.isArray(part)) {
      throw new TypeError(`composeContracts: part ${index + 1} must be a contract or an object of capability specs by name`);
    }
    const own = isContract(part) ? part.specs : part;
    for (const [name, spec] of Object.entries(own)) {
      if (Object.hasOwn(specs, name)) {
        throw new TypeError(
          `composeContracts: ${JSON.stringify(name)} is declared by part ${from[name]! + 1} and part ${index + 1}; ` +
            "a capability name must be declared once",
        );
      }
      specs[name] = spec;
      from[name] = index;
    }
  });
  // defineCapabilities checks the specs of a record part as it checks any contract's.
  return defineCapabilities(specs) as Contract<ComposedSpecs<Parts>>;
}
