// A database: a StatefulSet sized from a table of size classes, a Service in
// front of it and a Secret with what clients need to connect. The password
// comes from a Secret the XR names, which the function asks plait for.

import * as fn from './plait-function.js';

const SIZES = {
  small: { replicas: 1, cpu: '500m', memory: '1Gi', storage: '10Gi' },
  medium: { replicas: 2, cpu: '2', memory: '4Gi', storage: '50Gi' },
  large: { replicas: 3, cpu: '4', memory: '16Gi', storage: '200Gi' },
};
const PORT = 5432;

function compose(req) {
  const resp = req.response();
  const name = req.get('metadata.name');
  const namespace = req.get('metadata.namespace', 'default');
  const sizeName = req.get('spec.size', 'small');
  const size = SIZES[sizeName];
  if (size === undefined) {
    throw new fn.InvalidInput(`spec.size: ${JSON.stringify(sizeName)} is not one of ${Object.keys(SIZES).join(', ')}`);
  }
  const version = req.get('spec.version', '16');
  const database = req.get('spec.database', name);
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/component': 'database' };

  resp.setResource('statefulset', {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, labels },
    spec: {
      serviceName: name,
      replicas: size.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: 'postgres',
            image: `postgres:${version}`,
            ports: [{ name: 'postgres', containerPort: PORT }],
            env: [
              { name: 'POSTGRES_DB', value: database },
              { name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: `${name}-connection`, key: 'password' } } },
            ],
            resources: { requests: { cpu: size.cpu, memory: size.memory }, limits: { memory: size.memory } },
          }],
        },
      },
      volumeClaimTemplates: [{
        metadata: { name: 'data' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: req.get('spec.storage', size.storage) } } },
      }],
    },
  });
  resp.setResource('service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels },
    spec: { selector: labels, ports: [{ name: 'postgres', port: PORT, targetPort: 'postgres' }] },
  });

  const host = `${name}.${namespace}.svc.cluster.local`;
  const passwordSecret = req.get('spec.passwordSecretName', `${name}-password`);
  const supplied = req.required('password')[0];
  resp.requireResource('password', { apiVersion: 'v1', kind: 'Secret', matchName: passwordSecret, namespace });
  if (supplied === undefined) {
    resp.warning(`waiting for Secret ${passwordSecret} with the database password`, { reason: 'WaitingForPassword' });
  } else {
    const password = fn.get(supplied, 'data.password');
    if (password === undefined) throw new fn.InvalidInput(`Secret ${passwordSecret} has no data.password`);
    const connection = { host, port: String(PORT), database, username: 'postgres' };
    resp.setResource('connection-secret', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${name}-connection`, labels },
      stringData: connection,
      data: { password },
    });
    for (const [key, value] of Object.entries(connection)) resp.setConnectionDetail(key, value);
  }

  const ready = req.observedField('statefulset', 'status.readyReplicas', 0);
  resp.setReady('statefulset', ready >= size.replicas);
  for (const other of ['service', 'connection-secret']) {
    if (resp.resource(other) !== undefined) resp.setReady(other, req.observedResource(other) !== undefined);
  }
  resp.setCompositeField('status.endpoint', `${host}:${PORT}`);
  resp.setCompositeField('status.readyReplicas', ready);
  resp.setCompositeField('status.resources', { cpu: size.cpu, memory: size.memory, replicas: size.replicas });
  return resp;
}

export const runFunction = fn.handler(compose);
