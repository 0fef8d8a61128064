// An example payload for a function, made from its request schema (JSON Schema as msgspec
// writes it: $defs and $ref, anyOf for optional types and for "one of these fields is
// needed", enums, defaults, formats, patterns): every required field gets a value of its
// type that the schema accepts, and a schema with none required shows its first few
// optional fields with their defaults, so that Invoke does something useful at once.
"use strict";

const EMPTY = (v) => v === null || v === "" || (Array.isArray(v) && v.length === 0);

function resolve(schema, root) {
  let s = schema;
  for (let i = 0; s && s.$ref && i < 8; i++) {
    const own = { ...s };
    delete own.$ref;
    s = { ...(root.$defs || {})[s.$ref.replace(/^#\/\$defs\//, "")], ...own };
  }
  return s;
}

// A field's own schema and a "one of these is needed" alternative's, both to hold: each of
// the alternative's types keeps the field's own constraints for that type (its items).
function both(own, extra) {
  const merged = { ...own, ...extra, default: undefined };
  if (own.anyOf && extra.anyOf) {
    merged.anyOf = extra.anyOf.map((alt) => ({ ...(own.anyOf.find((o) => o.type === alt.type) || {}), ...alt }));
  }
  return merged;
}

function stringFor(schema) {
  if (schema.format === "date-time") return new Date().toISOString();
  if (schema.format === "uri") return "http://127.0.0.1/";
  const n = Math.max(schema.minLength || 0, 7);
  const plain = "example".padEnd(n, "x").slice(0, schema.maxLength || n);
  if (!schema.pattern) return plain;
  // A pattern: the first of a few typical values it accepts (ids, hashes, names, paths).
  let re;
  try { re = new RegExp(schema.pattern, "u"); } catch (e) { return plain; }
  const tries = [plain, "deadbeef", "notes.md", "example-1", "src/example.py", "mem_example",
    "2026-01-01T00:00:00Z", "http://127.0.0.1/", "kind:example", "a", "A", "1", "example@example.com"];
  return tries.find((t) => re.test(t)) || plain;
}

function exampleFrom(schema, root, depth, needed) {
  if (!schema || depth > 8) return null;
  schema = resolve(schema, root);
  if (schema.examples && schema.examples.length) return schema.examples[0];
  // A default is what the field is when left out: shown as it is, unless the field must be
  // given, when an empty default would say nothing (or be refused).
  if (schema.default !== undefined && !(needed && EMPTY(schema.default))) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum && schema.enum.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type === "object" || schema.properties) {
    const props = { ...(schema.properties || {}) };
    let required = [...(schema.required || [])];
    // anyOf beside an object's own fields: "give at least one of these"; the first way.
    const ways = (schema.anyOf || []).filter((w) => w.required || w.properties);
    if (ways.length) {
      required = [...new Set([...required, ...(ways[0].required || [])])];
      for (const [k, v] of Object.entries(ways[0].properties || {})) props[k] = both(resolve(props[k] || {}, root), v);
    }
    const names = required.length ? required : Object.keys(props).slice(0, 3);
    const out = {};
    for (const name of names) out[name] = exampleFrom(props[name], root, depth + 1, required.includes(name));
    return out;
  }
  const choices = schema.anyOf || schema.oneOf;
  if (choices) {
    const real = choices.find((c) => c.type !== "null") || choices[0];
    return exampleFrom(real, root, depth + 1, needed);
  }
  if (type === "array") {
    const item = exampleFrom(schema.contains || schema.items, root, depth + 1, true);
    const n = Math.max(schema.minItems || 0, needed || schema.contains ? 1 : 0);
    return Array.from({ length: item === null ? 0 : n }, () => item);
  }
  if (type === "string") return stringFor(schema);
  if (type === "integer" || type === "number") {
    if (schema.minimum !== undefined) return schema.minimum;
    if (schema.exclusiveMinimum !== undefined) return schema.exclusiveMinimum + 1;
    return 1;
  }
  if (type === "boolean") return false;
  return null;
}

function examplePayload(schema) {
  if (schema && schema.type === "null") return "null";  // takes no payload
  if (!schema || (!schema.$ref && !schema.properties && !schema.type && !schema.anyOf)) return "{}";
  const value = exampleFrom(schema, schema, 0, true);
  return value === null || value === undefined ? "{}" : JSON.stringify(value, null, 2);
}
