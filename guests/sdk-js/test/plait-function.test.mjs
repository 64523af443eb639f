// Tests of the plait-function.js helpers under plain Node, with the shapes
// componentize-js hands a function for wit/function.wit.
//
//   node --test guests/sdk-js/test/plait-function.test.mjs
//
// `cargo test -p plait --test helpers` runs it.

import assert from 'node:assert/strict';
import { register } from 'node:module';
import { describe, test } from 'node:test';

register('./wit-hooks.mjs', import.meta.url);
const fn = await import('../plait-function.js');

const encode = (s) => new TextEncoder().encode(s);

function witResource(object, ready = 'unspecified', details = []) {
  return {
    resource: JSON.stringify(object),
    connectionDetails: details.map(([key, value]) => ({ key, value })),
    ready,
  };
}

function witRequest({
  composite, observed = [], desiredComposite, desired = [], input, context = {},
  required = [], schemas = [], credentials = [],
} = {}) {
  return {
    meta: { tag: 'tag-1', capabilities: [] },
    observed: {
      composite: composite === undefined ? undefined : witResource(composite),
      resources: observed.map(([name, resource]) => ({ name, resource })),
    },
    desired: {
      composite: desiredComposite,
      resources: desired.map(([name, resource]) => ({ name, resource })),
    },
    input,
    context: JSON.stringify(context),
    requiredResources: required.map(([name, items]) => ({ name, items: items.map((i) => JSON.stringify(i)) })),
    requiredSchemas: schemas.map(([name, openapiV3]) => ({ name, openapiV3 })),
    credentials: credentials.map(([name, data]) => ({ name, data: data.map(([key, value]) => ({ key, value })) })),
  };
}

const run = (compose, request) => fn.handler(compose)(request);
const desiredObjects = (response) =>
  Object.fromEntries(response.desired.resources.map((c) => [c.name, JSON.parse(c.resource.resource)]));
const desiredReady = (response) =>
  Object.fromEntries(response.desired.resources.map((c) => [c.name, c.resource.ready]));

const XR = {
  apiVersion: 'example.org/v1',
  kind: 'App',
  metadata: { name: 'web', labels: { 'app.kubernetes.io/name': 'web' } },
  spec: { replicas: 3, ports: [{ port: 80 }, { port: 443 }], empty: null },
};

describe('field paths', () => {
  test('get reads fields by path and falls back when missing', () => {
    const cases = [
      ['metadata.name', undefined, 'web'],
      ['spec.replicas', undefined, 3],
      ['spec.ports[1].port', undefined, 443],
      ['metadata.labels[app.kubernetes.io/name]', undefined, 'web'],
      ['spec.missing', 'dflt', 'dflt'],
      ['spec.missing.deeper', undefined, undefined],
      ['spec.ports[2].port', 0, 0],
      ['spec.ports.port', 'x', 'x'],
      ['spec.replicas[0]', 'x', 'x'],
      ['spec[ports]', undefined, [{ port: 80 }, { port: 443 }]],
      ['spec.empty', 'null is missing', 'null is missing'],
      ['metadata.toString', 'own fields only', 'own fields only'],
    ];
    for (const [path, fallback, want] of cases) {
      assert.deepEqual(fn.get(XR, path, fallback), want, path);
    }
  });

  test('invalid paths are rejected naming the path', () => {
    for (const path of ['', '.a', 'a.', 'a..b', 'a[0', 'a]', 'a[0]b', 'a[]']) {
      assert.throws(() => fn.get(XR, path), /field path/, JSON.stringify(path));
    }
  });

  test('set creates what is missing on the way', () => {
    const cases = [
      [{}, 'a.b.c', 1, { a: { b: { c: 1 } } }],
      [{ a: { x: 1 } }, 'a.y', 2, { a: { x: 1, y: 2 } }],
      [{}, 'a[1].b', 1, { a: [null, { b: 1 }] }],
      [{ a: [1, 2] }, 'a[0]', 9, { a: [9, 2] }],
      [{}, 'labels[app.kubernetes.io/name]', 'web', { labels: { 'app.kubernetes.io/name': 'web' } }],
      [{ a: null }, 'a.b', 1, { a: { b: 1 } }],
    ];
    for (const [obj, path, value, want] of cases) {
      assert.deepEqual(fn.set(obj, path, value), want, path);
    }
  });

  test('set through the wrong kind of value fails naming the path', () => {
    for (const [obj, path] of [[{ a: 1 }, 'a.b'], [{ a: {} }, 'a[0]'], [{ a: [] }, 'a.b']]) {
      assert.throws(() => fn.set(obj, path, 1), new RegExp(`cannot set ${path.replace(/[[\]]/g, '\\$&')}`), path);
    }
  });
});

describe('requests', () => {
  test('request fields are decoded', () => {
    const request = new fn.Request(witRequest({
      composite: XR,
      observed: [['db', witResource({ kind: 'DB', status: { phase: 'Up' } }, 'true')]],
      input: '{"size": 2}',
      context: { k: 'v' },
      required: [['secrets', [{ kind: 'Secret' }]]],
      schemas: [['app', '{"type": "object"}'], ['unknown', undefined]],
      credentials: [['creds', [['token', encode('s3cr3t')]]]],
    }));
    const cases = [
      ['get', request.get('spec.ports[0].port'), 80],
      ['get fallback', request.get('spec.nothing', 7), 7],
      ['observed resource', request.observedResource('db'), { kind: 'DB', status: { phase: 'Up' } }],
      ['observed readiness', request.observed.db.ready, true],
      ['missing observed resource', request.observedResource('cache'), undefined],
      ['observed field', request.observedField('db', 'status.phase'), 'Up'],
      ['observed field of missing resource', request.observedField('cache', 'status.phase', '-'), '-'],
      ['input', request.input, { size: 2 }],
      ['context', request.context, { k: 'v' }],
      ['required', request.required('secrets'), [{ kind: 'Secret' }]],
      ['required not resolved yet', request.required('other'), []],
      ['schemas', request.requiredSchemas, { app: { type: 'object' }, unknown: undefined }],
      ['credentials', request.credentials, { creds: { token: encode('s3cr3t') } }],
    ];
    for (const [name, got, want] of cases) assert.deepEqual(got, want, name);
  });

  test('a request without observed composite reads as empty', () => {
    const request = new fn.Request(witRequest());
    assert.deepEqual(request.composite, {});
    assert.equal(request.input, undefined);
    assert.equal(request.get('metadata.name', 'none'), 'none');
  });
});

describe('responses', () => {
  test('compose keeps earlier steps and their readiness', () => {
    const earlier = [
      ['kept', witResource({ kind: 'A' }, 'true', [['k', encode('v')]])],
      ['replaced', witResource({ kind: 'B' }, 'false')],
    ];
    const response = run((req) => {
      const resp = req.response();
      resp.setResource('replaced', { kind: 'B2' });
      resp.setResource('added', { kind: 'C', metadata: { name: req.get('metadata.name') } });
      return resp;
    }, witRequest({ composite: XR, desired: earlier, context: { x: 1 } }));
    assert.deepEqual(response.meta, { tag: 'tag-1', ttlMs: undefined });
    assert.deepEqual(desiredObjects(response), {
      added: { kind: 'C', metadata: { name: 'web' } },
      kept: { kind: 'A' },
      replaced: { kind: 'B2' },
    });
    assert.deepEqual(desiredReady(response), { added: 'unspecified', kept: 'true', replaced: 'false' });
    const kept = response.desired.resources.find((c) => c.name === 'kept');
    assert.deepEqual(kept.resource.connectionDetails, [{ key: 'k', value: encode('v') }]);
    assert.deepEqual(JSON.parse(response.context), { x: 1 });
    assert.deepEqual(response.desired.resources.map((c) => c.name), ['added', 'kept', 'replaced']);
  });

  test('readiness maps to the contract', () => {
    for (const [ready, want] of [[true, 'true'], [false, 'false'], [undefined, 'unspecified']]) {
      const response = run((req) => {
        const resp = req.response();
        resp.setResource('r', { kind: 'R' });
        resp.setReady('r', ready);
        resp.setCompositeReady(ready);
        return resp;
      }, witRequest());
      assert.deepEqual(desiredReady(response), { r: want }, String(ready));
      assert.equal(response.desired.composite.ready, want, String(ready));
    }
  });

  test('composite fields and connection details', () => {
    const { composite } = run((req) => {
      const resp = req.response();
      resp.setCompositeField('status.endpoint', 'db:5432');
      resp.setConnectionDetail('password', 'pw');
      resp.setConnectionDetail('raw', new Uint8Array([0, 1]));
      return resp;
    }, witRequest()).desired;
    assert.deepEqual(JSON.parse(composite.resource), { status: { endpoint: 'db:5432' } });
    assert.deepEqual(composite.connectionDetails, [
      { key: 'password', value: encode('pw') },
      { key: 'raw', value: new Uint8Array([0, 1]) },
    ]);
  });

  test('results keep severity reason and target', () => {
    const response = run((req) => {
      const resp = req.response();
      resp.normal('n');
      resp.warning('w', { reason: 'Why', target: 'composite-and-claim' });
      resp.fatal('f', { target: 'composite' });
      return resp;
    }, witRequest());
    assert.deepEqual(response.results, [
      { severity: 'normal', message: 'n', reason: undefined, target: undefined },
      { severity: 'warning', message: 'w', reason: 'Why', target: 'composite-and-claim' },
      { severity: 'fatal', message: 'f', reason: undefined, target: 'composite' },
    ]);
  });

  test('conditions map status and target', () => {
    const response = run((req) => {
      const resp = req.response();
      resp.addCondition('DatabaseReady', true, 'Available');
      resp.addCondition('Backup', false, 'Failed', { message: 'disk full', target: 'composite-and-claim' });
      resp.addCondition('Probe', undefined, 'Pending');
      return resp;
    }, witRequest());
    assert.deepEqual(response.conditions, [
      { type: 'DatabaseReady', status: 'true', reason: 'Available', message: undefined, target: undefined },
      { type: 'Backup', status: 'false', reason: 'Failed', message: 'disk full', target: 'composite-and-claim' },
      { type: 'Probe', status: 'unknown', reason: 'Pending', message: undefined, target: undefined },
    ]);
  });

  test('requirements by name, labels and schema', () => {
    const { requirements } = run((req) => {
      const resp = req.response();
      resp.requireResource('b-by-labels', {
        apiVersion: 'v1', kind: 'Secret', matchLabels: { z: '1', a: '2' }, namespace: 'ns',
      });
      resp.requireResource('a-by-name', { apiVersion: 'v1', kind: 'ConfigMap', matchName: 'cfg' });
      resp.requireSchema('s', 'example.org/v1', 'App');
      return resp;
    }, witRequest());
    assert.deepEqual(requirements, {
      resources: [
        {
          name: 'a-by-name',
          selector: { apiVersion: 'v1', kind: 'ConfigMap', match: { tag: 'name', val: 'cfg' }, namespace: undefined },
        },
        {
          name: 'b-by-labels',
          selector: {
            apiVersion: 'v1', kind: 'Secret', match: { tag: 'labels', val: { labels: [['a', '2'], ['z', '1']] } }, namespace: 'ns',
          },
        },
      ],
      schemas: [{ name: 's', selector: { apiVersion: 'example.org/v1', kind: 'App' } }],
    });
  });

  test('ttl and output are passed on', () => {
    const response = run((req) => {
      const resp = req.response();
      resp.ttlMs = 30000;
      resp.output = { done: true };
      return resp;
    }, witRequest());
    assert.equal(response.meta.ttlMs, 30000n);
    assert.deepEqual(JSON.parse(response.output), { done: true });
    assert.equal(run((req) => req.response(), witRequest()).output, undefined);
  });
});

describe('failures', () => {
  test('errors become step errors of the right kind', () => {
    const cases = [
      ['invalid input', () => { throw new fn.InvalidInput('spec.size: must be positive'); }, witRequest(),
        { tag: 'invalid-input', val: 'spec.size: must be positive' }],
      ['a bug', (req) => req.nothing.deeper, witRequest(),
        { tag: 'internal', val: "TypeError: Cannot read properties of undefined (reading 'deeper')" }],
      ['readiness of an unknown resource', (req) => req.response().setReady('nothing', true), witRequest(),
        { tag: 'internal', val: 'Error: cannot set readiness of "nothing": it is not a desired resource' }],
      ['both matches', (req) => req.response().requireResource('r', {
        apiVersion: 'v1', kind: 'Secret', matchName: 'a', matchLabels: { a: 'b' },
      }), witRequest(), { tag: 'internal', val: 'Error: requireResource needs exactly one of matchName and matchLabels' }],
      ['a thrown string', () => { throw 'plain'; }, witRequest(), { tag: 'internal', val: 'Error: plain' }],
      ['malformed input', (req) => req.response(), witRequest({ input: '{' }),
        { tag: 'invalid-input', val: "request: Expected property name or '}' in JSON at position 1" }],
    ];
    for (const [name, compose, request, want] of cases) {
      assert.throws(() => run(compose, request), (e) => {
        assert.deepEqual(e, want, name);
        return true;
      }, name);
    }
  });

  test('log passes level and message to the host', () => {
    globalThis.plaitLog = [];
    fn.log('hello');
    fn.log('careful', 'warn');
    assert.deepEqual(globalThis.plaitLog, [['info', 'hello'], ['warn', 'careful']]);
  });
});
