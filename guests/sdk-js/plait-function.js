// Helpers for writing plait composition functions in JavaScript.
//
// Functions work with plain objects; this module converts to and from the
// component bindings componentize-js generates for wit/function.wit.
//
//   import * as fn from './plait-function.js';
//
//   export const runFunction = fn.handler((req) => {
//     const resp = req.response();              // passes earlier steps through
//     resp.setResource('config', { apiVersion: 'v1', kind: 'ConfigMap',
//       data: { owner: req.get('metadata.name') } });
//     resp.setReady('config', req.observedResource('config') !== undefined);
//     return resp;
//   });
//
// Build with `componentize-js app.js --wit wit --world-name function
// -d http fetch-event -o function.wasm`.

import { log as witLog } from 'plait:function/log@1.0.0';

/** Throw to fail the step because the XR or the input is not acceptable. */
export class InvalidInput extends Error {}

// ------------------------------------------------------------ field paths

function parse(path) {
  if (!path) throw new Error('invalid field path: it is empty');
  const segments = [];
  const re = /\[([^\]]+)\]|([^.[\]]+)/y;
  let pos = 0;
  while (pos < path.length) {
    if (segments.length > 0) {
      // A segment ends at a dot or an opening bracket.
      if (path[pos] === '.') pos += 1;
      else if (path[pos] !== '[') throw new Error(`invalid field path ${JSON.stringify(path)} at offset ${pos}`);
    }
    re.lastIndex = pos;
    const m = re.exec(path);
    if (!m) throw new Error(`invalid field path ${JSON.stringify(path)} at offset ${pos}`);
    if (m[1] !== undefined) segments.push(/^\d+$/.test(m[1]) ? Number(m[1]) : m[1]);
    else segments.push(m[2]);
    pos = re.lastIndex;
  }
  return segments;
}

/** The value at `path` (e.g. `spec.items[0].name`) in `obj`, or `fallback`. */
export function get(obj, path, fallback = undefined) {
  let current = obj;
  for (const seg of parse(path)) {
    if (typeof seg === 'number' ? !Array.isArray(current) : (current === null || typeof current !== 'object' || Array.isArray(current))) {
      return fallback;
    }
    if (!Object.hasOwn(current, seg)) return fallback;
    current = current[seg];
  }
  return current === null || current === undefined ? fallback : current;
}

/** Sets `path` in `obj` to `value`, creating objects and arrays on the way. */
export function set(obj, path, value) {
  const segments = parse(path);
  let current = obj;
  segments.forEach((seg, i) => {
    const last = i === segments.length - 1;
    const wantArray = typeof seg === 'number';
    if (wantArray !== Array.isArray(current) || current === null || typeof current !== 'object') {
      throw new Error(`cannot set ${path}: segment ${i} is not ${wantArray ? 'an array' : 'an object'}`);
    }
    if (wantArray) while (current.length <= seg) current.push(null);
    if (last) {
      current[seg] = value;
    } else {
      if (current[seg] === null || current[seg] === undefined) {
        current[seg] = typeof segments[i + 1] === 'number' ? [] : {};
      }
      current = current[seg];
    }
  });
  return obj;
}

// ------------------------------------------------------------ resources

const READY_IN = { unspecified: undefined, true: true, false: false };
const encoder = new TextEncoder();

/** A Kubernetes object with its readiness (undefined, true or false) and
 * connection details (key -> Uint8Array). */
export class Resource {
  constructor(object, ready = undefined, connectionDetails = {}) {
    this.object = object;
    this.ready = ready;
    this.connectionDetails = { ...connectionDetails };
  }

  static fromWit(r) {
    const details = {};
    for (const d of r.connectionDetails) details[d.key] = d.value;
    return new Resource(JSON.parse(r.resource), READY_IN[r.ready], details);
  }

  toWit() {
    return {
      resource: JSON.stringify(this.object),
      connectionDetails: Object.keys(this.connectionDetails).sort().map((key) => ({
        key,
        value: this.connectionDetails[key],
      })),
      ready: this.ready === undefined ? 'unspecified' : String(this.ready),
    };
  }
}

function stateFromWit(s) {
  const resources = {};
  for (const c of s.resources) resources[c.name] = Resource.fromWit(c.resource);
  return [s.composite === undefined ? undefined : Resource.fromWit(s.composite), resources];
}

function stateToWit(composite, resources) {
  return {
    composite: composite === undefined ? undefined : composite.toWit(),
    resources: Object.keys(resources).sort().map((name) => ({ name, resource: resources[name].toWit() })),
  };
}

// ------------------------------------------------------------ request

/** What the step is called with, as plain objects. */
export class Request {
  constructor(wit) {
    this.tag = wit.meta.tag;
    const [composite, observed] = stateFromWit(wit.observed);
    this.composite = composite === undefined ? {} : composite.object;
    this.observed = observed;
    [this.desiredComposite, this.desired] = stateFromWit(wit.desired);
    this.input = wit.input === undefined ? undefined : JSON.parse(wit.input);
    this.context = JSON.parse(wit.context);
    this.requiredResources = {};
    for (const r of wit.requiredResources) this.requiredResources[r.name] = r.items.map((i) => JSON.parse(i));
    this.requiredSchemas = {};
    for (const s of wit.requiredSchemas) {
      this.requiredSchemas[s.name] = s.openapiV3 === undefined ? undefined : JSON.parse(s.openapiV3);
    }
    this.credentials = {};
    for (const c of wit.credentials) {
      this.credentials[c.name] = Object.fromEntries(c.data.map((d) => [d.key, d.value]));
    }
  }

  /** A field of the observed XR, e.g. `spec.parameters.region`. */
  get(path, fallback = undefined) {
    return get(this.composite, path, fallback);
  }

  /** An observed composed resource, or undefined. */
  observedResource(name) {
    return this.observed[name]?.object;
  }

  /** A field of an observed composed resource. */
  observedField(name, path, fallback = undefined) {
    return get(this.observedResource(name) ?? {}, path, fallback);
  }

  /** Resources supplied for a requirement; [] until the host resolved it. */
  required(name) {
    return this.requiredResources[name] ?? [];
  }

  /** A response that passes the desired state and context through. */
  response() {
    return new Response(this);
  }
}

// ------------------------------------------------------------ response

/** What the step returns. Starts from the request's desired state. */
export class Response {
  constructor(request) {
    this.tag = request.tag;
    this.composite = request.desiredComposite;
    this.desired = {};
    for (const [name, r] of Object.entries(request.desired)) {
      this.desired[name] = new Resource(r.object, r.ready, r.connectionDetails);
    }
    this.context = request.context;
    this.results = [];
    this.conditions = [];
    this.resourceRequirements = {};
    this.schemaRequirements = {};
    this.ttlMs = undefined;
    this.output = undefined;
  }

  /** Adds or replaces a desired composed resource, keeping the readiness
   * and connection details earlier steps gave it. Returns the object. */
  setResource(name, object) {
    if (this.desired[name]) this.desired[name].object = object;
    else this.desired[name] = new Resource(object);
    return object;
  }

  /** A desired composed resource's object, or undefined. */
  resource(name) {
    return this.desired[name]?.object;
  }

  /** Marks a desired composed resource ready (true), not ready (false) or
   * leaves it to plait (undefined). */
  setReady(name, ready) {
    if (!this.desired[name]) throw new Error(`cannot set readiness of ${JSON.stringify(name)}: it is not a desired resource`);
    this.desired[name].ready = ready;
  }

  compositeResource() {
    if (this.composite === undefined) this.composite = new Resource({});
    return this.composite;
  }

  /** Sets a field of the desired XR, usually under `status`. */
  setCompositeField(path, value) {
    set(this.compositeResource().object, path, value);
  }

  setCompositeReady(ready) {
    this.compositeResource().ready = ready;
  }

  /** Adds a key to the XR's connection secret (a string or a Uint8Array). */
  setConnectionDetail(key, value) {
    this.compositeResource().connectionDetails[key] = typeof value === 'string' ? encoder.encode(value) : value;
  }

  normal(message, { reason, target } = {}) {
    this.results.push({ severity: 'normal', message, reason, target });
  }

  warning(message, { reason, target } = {}) {
    this.results.push({ severity: 'warning', message, reason, target });
  }

  /** The pipeline stops: nothing is applied or deleted. */
  fatal(message, { reason, target } = {}) {
    this.results.push({ severity: 'fatal', message, reason, target });
  }

  /** Sets a condition on the XR; status is true, false or undefined (unknown). */
  addCondition(type, status, reason, { message, target } = {}) {
    const s = status === undefined ? 'unknown' : String(status);
    this.conditions.push({ type, status: s, reason, message, target });
  }

  /** Asks to be called again with resources, by `matchName` or `matchLabels`. */
  requireResource(name, { apiVersion, kind, matchName, matchLabels, namespace }) {
    if ((matchName === undefined) === (matchLabels === undefined)) {
      throw new Error('requireResource needs exactly one of matchName and matchLabels');
    }
    const match = matchName !== undefined
      ? { tag: 'name', val: matchName }
      : { tag: 'labels', val: { labels: Object.entries(matchLabels).sort() } };
    this.resourceRequirements[name] = { apiVersion, kind, match, namespace };
  }

  requireSchema(name, apiVersion, kind) {
    this.schemaRequirements[name] = { apiVersion, kind };
  }

  toWit() {
    const sorted = (o) => Object.keys(o).sort();
    return {
      meta: { tag: this.tag, ttlMs: this.ttlMs === undefined ? undefined : BigInt(this.ttlMs) },
      desired: stateToWit(this.composite, this.desired),
      results: this.results,
      context: JSON.stringify(this.context),
      requirements: {
        resources: sorted(this.resourceRequirements).map((name) => ({ name, selector: this.resourceRequirements[name] })),
        schemas: sorted(this.schemaRequirements).map((name) => ({ name, selector: this.schemaRequirements[name] })),
      },
      conditions: this.conditions,
      output: this.output === undefined ? undefined : JSON.stringify(this.output),
    };
  }
}

// ------------------------------------------------------------ glue

/** Writes a line to plait's log: level is trace, debug, info, warn or error. */
export function log(message, level = 'info') {
  witLog(level, message);
}

/** Wraps `compose(Request) -> Response` as the component's runFunction:
 * `export const runFunction = handler(compose);`. */
export function handler(compose) {
  return (wit) => {
    let request;
    try {
      request = new Request(wit);
    } catch (e) {
      throw { tag: 'invalid-input', val: `request: ${e.message}` };
    }
    try {
      return compose(request).toWit();
    } catch (e) {
      if (e instanceof InvalidInput) throw { tag: 'invalid-input', val: e.message };
      throw { tag: 'internal', val: `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}` };
    }
  };
}
