import * as fn from './plait-function.js';

function compose(req) {
  const resp = req.response(); // passes earlier steps through
  const greeting = req.get('spec.greeting', 'Hello');
  resp.setResource('greeting', { apiVersion: 'v1', kind: 'ConfigMap', data: { greeting } });
  resp.setReady('greeting', req.observedResource('greeting') !== undefined);
  resp.setCompositeField('status.greeting', greeting);
  resp.normal(`composed greeting ${JSON.stringify(greeting)}`);
  return resp;
}

export const runFunction = fn.handler(compose);
