"""The Kubernetes API as python3-kubernetes sees it.

Drives a server (hb-kubemu, or a real cluster with the MPIJob CRD and the
MPI Operator) through the official client: discovery, create, get, list
with selectors and paging, 409s, the status subresource, generation,
Strict validation, server-side apply, watch with resume and 410, pods and
their logs, events, leases, deletion with its dependents, and the MPI
Operator's conditions.  With --admin (the emulator's admin URL) it also
checks authentication (401, 403), TLS verification and the faults.

Usage: kubemu_client.py --kubeconfig FILE [--namespace NS] [--admin URL]
       [--restricted-token TOKEN:NS] [--wrong-ca FILE] [--window N]
Exit status 0 when every check passed; failures are listed.
"""
import argparse
import copy
import json
import ssl
import sys
import time
import urllib.error
import urllib.request

import kubernetes
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = 'kubeflow.org', 'v2beta1', 'mpijobs'
RUN = '%d' % (time.time() * 1000 % 100000000)

failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
        print('ok   %s' % what)
    else:
        failures.append(what)
        print('FAIL %s' % what)
    return cond


def expect_status(fn, code, what, reason=None, contains=None):
    """Call fn; check that it fails with HTTP code (and reason, text)."""
    try:
        fn()
    except ApiException as e:
        body = {}
        try:
            body = json.loads(e.body or '{}')
        except ValueError:
            pass
        ok = e.status == code
        if reason is not None:
            ok = ok and body.get('reason') == reason
        if contains is not None:
            ok = ok and contains in (body.get('message') or '')
        check(ok and body.get('kind') == 'Status' and
              body.get('code') == code,
              '%s: %s (got %s %s: %s)' % (what, code, e.status,
                                          body.get('reason'),
                                          (body.get('message') or '')[:160]))
        return body
    check(False, '%s: expected HTTP %d, the call succeeded' % (what, code))
    return {}


def mpijob(name, labels=None, workers=1, managed_by=None, annotations=None,
           command=None):
    job = {
        'apiVersion': GROUP + '/' + VERSION,
        'kind': 'MPIJob',
        'metadata': {'name': name, 'labels': labels or {}},
        'spec': {
            'slotsPerWorker': 1,
            'runPolicy': {'cleanPodPolicy': 'Running', 'backoffLimit': 0},
            'mpiImplementation': 'OpenMPI',
            'mpiReplicaSpecs': {
                'Launcher': {
                    'replicas': 1,
                    'restartPolicy': 'Never',
                    'template': {'spec': {'containers': [{
                        'name': 'launcher',
                        'image': 'mpioperator/openmpi:v0.6.0',
                        'command': command or ['/bin/sh', '-c',
                                               'echo hello'],
                    }]}},
                },
                'Worker': {
                    'replicas': workers,
                    'restartPolicy': 'Never',
                    'template': {'spec': {'containers': [{
                        'name': 'worker',
                        'image': 'mpioperator/openmpi:v0.6.0',
                    }]}},
                },
            },
        },
    }
    if managed_by:
        job['spec']['runPolicy']['managedBy'] = managed_by
    if annotations:
        job['metadata']['annotations'] = annotations
    return job


def wait_for(fn, timeout=30, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return None


def cond(obj, ctype):
    for c in (obj.get('status') or {}).get('conditions') or []:
        if c.get('type') == ctype:
            return c
    return None


class Suite:
    def __init__(self, args):
        self.args = args
        self.ns = args.namespace
        self.api = client.ApiClient()
        self.co = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)
        self.coord = client.CoordinationV1Api(self.api)

    # -- helpers ------------------------------------------------------
    def create(self, body, **kw):
        return self.co.create_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, body, **kw)

    def create_raw(self, body, field_validation):
        """create with ?fieldValidation= (newer than this client)."""
        r = self.raw('POST', '/apis/%s/%s/namespaces/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL), body,
                     query=[('fieldValidation', field_validation)])
        return json.loads(r[0].data)

    def get(self, name):
        return self.co.get_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name)

    def list(self, **kw):
        return self.co.list_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, **kw)

    def delete(self, name, **kw):
        return self.co.delete_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, **kw)

    def raw(self, method, path, body=None, ctype='application/json',
            query=None):
        """A request through the client's own connection and auth."""
        return self.api.call_api(
            path, method, query_params=query or [],
            header_params={'Content-Type': ctype,
                           'Accept': 'application/json'},
            body=body, auth_settings=['BearerToken'],
            _preload_content=False, _return_http_data_only=False)

    def admin(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.args.admin + path, data=data,
                                     method=method)
        req.add_header('Content-Type', 'application/json')
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.loads(r.read() or b'{}')

    # -- checks -------------------------------------------------------
    def discovery(self):
        v = client.VersionApi(self.api).get_code()
        check(v.major == '1' and v.git_version, 'GET /version')
        dyn = dynamic.DynamicClient(self.api)
        res = dyn.resources.get(api_version=GROUP + '/' + VERSION,
                                kind='MPIJob')
        check(res.namespaced and res.name == 'mpijobs',
              'dynamic client discovers MPIJob')
        check('status' in (res.subresources or {}),
              'discovery lists mpijobs/status')
        pods = dyn.resources.get(api_version='v1', kind='Pod')
        check(pods.name == 'pods', 'dynamic client discovers Pod')
        lease = dyn.resources.get(api_version='coordination.k8s.io/v1',
                                  kind='Lease')
        check(lease.name == 'leases', 'dynamic client discovers Lease')
        tj = dyn.resources.get(api_version='trainer.kubeflow.org/v1alpha1',
                               kind='TrainJob')
        check(tj.name == 'trainjobs', 'dynamic client discovers TrainJob')
        self.dyn = dyn

    def crud(self):
        name = 'crud-' + RUN
        # Managed elsewhere: the operator's status writes would race the
        # updates below.
        obj = self.create(mpijob(name, labels={'app': 'a', 'tier': 'x'},
                                 managed_by='example.com/other'))
        md = obj['metadata']
        check(md.get('uid') and md.get('resourceVersion') and
              md.get('creationTimestamp'), 'create sets uid, rv, time')
        check(md.get('generation') == 1, 'create sets generation 1')
        check(obj['spec'].get('launcherCreationPolicy') == 'AtStartup',
              'CRD defaults applied (launcherCreationPolicy)')
        got = self.get(name)
        check(got['metadata']['uid'] == md['uid'], 'get returns it')
        expect_status(lambda: self.create(mpijob(name)), 409,
                      'create again', 'AlreadyExists')
        expect_status(lambda: self.get('no-such-' + RUN), 404,
                      'get missing', 'NotFound',
                      'mpijobs.kubeflow.org "no-such-')

        # Stale resourceVersion on update.
        stale = copy.deepcopy(got)
        got['metadata']['labels']['tier'] = 'y'
        upd = self.co.replace_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, got)
        check(int(upd['metadata']['resourceVersion']) >
              int(md['resourceVersion']), 'update bumps resourceVersion')
        check(upd['metadata']['generation'] == 1,
              'label change keeps generation')
        stale['metadata']['labels']['tier'] = 'z'
        expect_status(lambda: self.co.replace_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, stale), 409,
            'update with a stale resourceVersion', 'Conflict',
            'the object has been modified')
        nov = copy.deepcopy(upd)
        del nov['metadata']['resourceVersion']
        expect_status(lambda: self.co.replace_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, nov), 422,
            'update without resourceVersion', 'Invalid')

        # Spec change bumps generation; status through the main resource
        # is ignored.
        upd['spec']['slotsPerWorker'] = 2
        upd['status'] = {'conditions': [{'type': 'Bogus',
                                         'status': 'True'}]}
        upd2 = self.co.replace_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, upd)
        check(upd2['metadata']['generation'] == 2,
              'spec change bumps generation')
        check(not cond(upd2, 'Bogus'),
              'status through the main resource is ignored')

        # Status subresource: only status changes, generation stays.
        st = {'status': {'conditions': [{
            'type': 'Created', 'status': 'True', 'reason': 'Test',
            'message': 'set by the test',
            'lastUpdateTime': '2024-01-01T00:00:00Z',
            'lastTransitionTime': '2024-01-01T00:00:00Z'}]},
            'spec': {'slotsPerWorker': 7}}
        upd3 = self.co.patch_namespaced_custom_object_status(
            GROUP, VERSION, self.ns, PLURAL, name, st)
        check(cond(upd3, 'Created') and
              cond(upd3, 'Created')['reason'] == 'Test',
              'status patch sets status')
        check(upd3['spec']['slotsPerWorker'] == 2,
              'status patch leaves spec alone')
        check(upd3['metadata']['generation'] == 2,
              'status patch keeps generation')

        # Merge patch of labels.
        p = self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'labels': {'tier': None, 'extra': 'e'}}})
        check('tier' not in p['metadata']['labels'] and
              p['metadata']['labels'].get('extra') == 'e',
              'merge patch removes and adds labels')
        # A resourceVersion in a patch is a precondition.
        expect_status(lambda: self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'resourceVersion': md['resourceVersion'],
                          'labels': {'x': 'y'}}}), 409,
            'patch with a stale resourceVersion', 'Conflict')
        # A no-op update does not make a new version.
        same = self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'labels': {'extra': 'e'}}})
        check(same['metadata']['resourceVersion'] ==
              p['metadata']['resourceVersion'],
              'a no-op patch keeps the resourceVersion')
        # JSON patch through the raw API.
        r = self.raw('PATCH', '/apis/%s/%s/namespaces/%s/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL, name),
                     [{'op': 'replace', 'path': '/spec/slotsPerWorker',
                       'value': 3},
                      {'op': 'test', 'path': '/spec/slotsPerWorker',
                       'value': 3}],
                     'application/json-patch+json')
        check(r[1] == 200 and
              json.loads(r[0].data)['spec']['slotsPerWorker'] == 3,
              'JSON patch')
        # Strategic merge patch is not for custom resources.
        try:
            self.raw('PATCH', '/apis/%s/%s/namespaces/%s/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL, name),
                     {'metadata': {'labels': {'a': 'b'}}},
                     'application/strategic-merge-patch+json')
            check(False, 'strategic merge patch on a CR: 415')
        except ApiException as e:
            check(e.status == 415, 'strategic merge patch on a CR: 415')
        self.delete(name)
        expect_status(lambda: self.get(name), 404, 'deleted object')

    def validation(self):
        bad = mpijob('strict-' + RUN)
        bad['spec']['bogusField'] = 1
        bad['spec']['mpiReplicaSpecs']['Launcher']['template']['spec'][
            'containers'][0]['nope'] = 'x'
        body = expect_status(
            lambda: self.create_raw(bad, 'Strict'), 400,
            'Strict rejects unknown fields', 'BadRequest',
            'unknown field "spec.bogusField"')
        check('spec.mpiReplicaSpecs.Launcher.template.spec.containers[0]'
              '.nope' in body.get('message', ''),
              'Strict names the nested unknown field with its path')
        # Without Strict the server drops them, with a warning.
        r = self.raw('POST', '/apis/%s/%s/namespaces/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL), bad,
                     query=[('fieldValidation', 'Warn')])
        warn = r[2].get('Warning') or ''
        created = json.loads(r[0].data)
        check(r[1] == 201 and 'bogusField' not in created['spec'],
              'Warn drops unknown fields')
        check('unknown field' in warn and 'spec.bogusField' in warn,
              'Warn sends a Warning header: %r' % warn[:120])
        self.delete('strict-' + RUN)
        inv = mpijob('invalid-' + RUN)
        inv['spec']['slotsPerWorker'] = 'many'
        inv['spec']['mpiImplementation'] = 'LAM'
        body = expect_status(lambda: self.create(inv), 422,
                             'schema violations', 'Invalid')
        causes = (body.get('details') or {}).get('causes') or []
        fields = sorted(c.get('field') for c in causes)
        check('spec.slotsPerWorker' in fields and
              'spec.mpiImplementation' in fields,
              '422 lists causes with field paths: %r' % fields)
        nameless = mpijob('x')
        nameless['metadata'] = {'generateName': 'gen-'}
        made = self.create(nameless)
        check(made['metadata']['name'].startswith('gen-') and
              len(made['metadata']['name']) == 9, 'generateName')
        self.delete(made['metadata']['name'])
        badname = mpijob('Bad_Name')
        expect_status(lambda: self.create(badname), 422,
                      'an invalid name', 'Invalid', 'metadata.name')

    def selectors_and_paging(self):
        names = []
        for i, (app, tier) in enumerate([('web', 'front'), ('web', 'back'),
                                         ('db', 'back'), ('db', None),
                                         ('cache', 'front')]):
            labels = {'app': app, 'run': RUN}
            if tier:
                labels['tier'] = tier
            n = 'sel-%d-%s' % (i, RUN)
            self.create(mpijob(n, labels=labels,
                               managed_by='example.com/other'))
            names.append(n)

        def sel(s):
            return sorted(o['metadata']['name'] for o in
                          self.list(label_selector='run=%s,%s' % (RUN, s))
                          ['items'])

        check(sel('app=web') == names[0:2], 'selector =')
        check(sel('app==db') == names[2:4], 'selector ==')
        check(sel('app!=web') == names[2:5], 'selector !=')
        check(sel('app in (web,cache)') == [names[0], names[1], names[4]],
              'selector in')
        check(sel('app notin (web,cache)') == names[2:4], 'selector notin')
        check(sel('tier') == [names[0], names[1], names[2], names[4]],
              'selector exists')
        check(sel('!tier') == [names[3]], 'selector !exists')
        expect_status(lambda: self.list(label_selector='app in web'), 400,
                      'malformed selector', 'BadRequest')
        fs = self.list(field_selector='metadata.name=' + names[2])
        check([o['metadata']['name'] for o in fs['items']] == [names[2]],
              'field selector metadata.name')
        expect_status(lambda: self.list(field_selector='spec.foo=1'), 400,
                      'unsupported field selector', 'BadRequest')

        seen, token, pages = [], None, 0
        while True:
            kw = {'limit': 2, 'label_selector': 'run=' + RUN}
            if token:
                kw['_continue'] = token
            page = self.list(**kw)
            pages += 1
            check(len(page['items']) <= 2, 'page %d has at most 2' % pages)
            seen += [o['metadata']['name'] for o in page['items']]
            token = page['metadata'].get('continue')
            if token:
                check(page['metadata'].get('remainingItemCount', 0) > 0,
                      'remainingItemCount on page %d' % pages)
            if not token:
                break
        check(seen == sorted(names) and pages == 3,
              'paging with limit/continue: %d pages' % pages)
        expect_status(lambda: self.list(_continue='not-a-token'), 400,
                      'a bad continue token', 'BadRequest')
        for n in names:
            self.delete(n)

    def watches(self):
        lst = self.list(label_selector='watch=' + RUN)
        rv0 = lst['metadata']['resourceVersion']
        name = 'watch-' + RUN
        self.create(mpijob(name, labels={'watch': RUN},
                           managed_by='example.com/other'))
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'labels': {'step': '1'}}})
        w = watch.Watch()
        events = []
        for ev in w.stream(self.co.list_namespaced_custom_object, GROUP,
                           VERSION, self.ns, PLURAL,
                           label_selector='watch=' + RUN,
                           resource_version=rv0, timeout_seconds=2):
            events.append((ev['type'], ev['object']['metadata']
                           ['resourceVersion']))
            if len(events) == 2:
                w.stop()
        check([e[0] for e in events] == ['ADDED', 'MODIFIED'],
              'watch from a list version: %r' % events)
        last = events[-1][1] if events else rv0
        # Resume after a disconnect: only what came after.
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'labels': {'step': '2'}}})
        self.delete(name)
        events = []
        for ev in w.stream(self.co.list_namespaced_custom_object, GROUP,
                           VERSION, self.ns, PLURAL,
                           label_selector='watch=' + RUN,
                           resource_version=last, timeout_seconds=2):
            events.append(ev['type'])
            if len(events) == 2:
                w.stop()
        check(events == ['MODIFIED', 'DELETED'],
              'watch resumes from the last version: %r' % events)
        # A watch without a version starts with the current state.
        self.create(mpijob(name + 'b', labels={'watch': RUN},
                           managed_by='example.com/other'))
        events = []
        for ev in w.stream(self.co.list_namespaced_custom_object, GROUP,
                           VERSION, self.ns, PLURAL,
                           label_selector='watch=' + RUN,
                           timeout_seconds=1):
            events.append(ev['type'])
        check(events == ['ADDED'],
              'watch without a version: synthetic ADDED %r' % events)
        # A label change that leaves the selector is a DELETED.
        lst = self.list(label_selector='watch=' + RUN)
        rv = lst['metadata']['resourceVersion']
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name + 'b',
            {'metadata': {'labels': {'watch': 'gone'}}})
        events = []
        for ev in w.stream(self.co.list_namespaced_custom_object, GROUP,
                           VERSION, self.ns, PLURAL,
                           label_selector='watch=' + RUN,
                           resource_version=rv, timeout_seconds=1):
            events.append(ev['type'])
        check(events == ['DELETED'],
              'leaving the selector reads as DELETED: %r' % events)
        self.delete(name + 'b')
        # Bookmarks, when asked for.
        r = self.raw('GET', '/apis/%s/%s/namespaces/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL),
                     query=[('watch', 'true'), ('resourceVersion', rv),
                            ('allowWatchBookmarks', 'true'),
                            ('timeoutSeconds', '2'),
                            ('labelSelector', 'watch=nothing')])
        types = [json.loads(line)['type'] for line in
                 r[0].data.decode().splitlines() if line]
        check('BOOKMARK' in types, 'bookmarks: %r' % types)
        t0 = time.time()
        r = self.raw('GET', '/apis/%s/%s/namespaces/%s/%s' %
                     (GROUP, VERSION, self.ns, PLURAL),
                     query=[('watch', '1'), ('timeoutSeconds', '1'),
                            ('labelSelector', 'watch=nothing')])
        r[0].data  # the stream ends when the server ends it
        el = time.time() - t0
        check(r[1] == 200 and 0.8 < el < 5,
              'timeoutSeconds ends the watch (%.1fs)' % el)

    def gone(self):
        # Push the version window past an old version, then resume there.
        old = self.list()['metadata']['resourceVersion']
        name = 'churn-' + RUN
        self.create(mpijob(name, managed_by='example.com/other'))
        for i in range(self.args.window + 10):
            self.co.patch_namespaced_custom_object(
                GROUP, VERSION, self.ns, PLURAL, name,
                {'metadata': {'labels': {'i': str(i)}}})
        w = watch.Watch()
        try:
            for _ in w.stream(self.co.list_namespaced_custom_object, GROUP,
                              VERSION, self.ns, PLURAL,
                              resource_version=old, timeout_seconds=2):
                pass
            check(False, 'watch from a compacted version: 410')
        except ApiException as e:
            check(e.status == 410, 'watch from a compacted version: '
                  'ERROR event with 410 (%s)' % e.status)
        expect_status(lambda: self.list(resource_version=old,
                                        resource_version_match='Exact'),
                      410, 'list at a compacted version', 'Expired')
        # The client's own recovery: relist, then watch from there.
        rv = self.list()['metadata']['resourceVersion']
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'metadata': {'labels': {'i': 'final'}}})
        got = []
        for ev in w.stream(self.co.list_namespaced_custom_object, GROUP,
                           VERSION, self.ns, PLURAL, resource_version=rv,
                           timeout_seconds=1):
            got.append(ev['type'])
        check(got == ['MODIFIED'], 'relist and watch again: %r' % got)
        self.delete(name)

    def apply(self):
        name = 'apply-' + RUN
        path = '/apis/%s/%s/namespaces/%s/%s/%s' % (GROUP, VERSION, self.ns,
                                                     PLURAL, name)
        cfg = mpijob(name, labels={'owner': 'gateway'},
                     managed_by='example.com/other')
        r = self.raw('PATCH', path, json.dumps(cfg),
                     'application/apply-patch+yaml',
                     [('fieldManager', 'hpcbridge')])
        obj = json.loads(r[0].data)
        check(r[1] == 201 and obj['metadata']['labels'] ==
              {'owner': 'gateway'}, 'apply creates')
        mf = obj['metadata'].get('managedFields') or []
        check(any(m['manager'] == 'hpcbridge' and
                  m['operation'] == 'Apply' for m in mf),
              'apply records managedFields')
        # Another manager changes a field the gateway applied.
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name,
            {'spec': {'slotsPerWorker': 5}}, field_manager='someone')
        try:
            self.raw('PATCH', path, json.dumps(cfg),
                     'application/apply-patch+yaml',
                     [('fieldManager', 'hpcbridge')])
            check(False, 'apply over another manager: 409')
        except ApiException as e:
            check(e.status == 409 and b'conflict' in (e.body or b''),
                  'apply over another manager: 409 conflict')
        r = self.raw('PATCH', path, json.dumps(cfg),
                     'application/apply-patch+yaml',
                     [('fieldManager', 'hpcbridge'), ('force', 'true')])
        obj = json.loads(r[0].data)
        check(r[1] == 200 and obj['spec']['slotsPerWorker'] == 1,
              'apply with force takes the field')
        # Fields the manager stops applying go.
        cfg2 = copy.deepcopy(cfg)
        cfg2['metadata']['labels'] = {'other': 'x'}
        r = self.raw('PATCH', path, json.dumps(cfg2),
                     'application/apply-patch+yaml',
                     [('fieldManager', 'hpcbridge')])
        obj = json.loads(r[0].data)
        check(obj['metadata']['labels'] == {'other': 'x'},
              'apply removes what it no longer applies: %r' %
              obj['metadata']['labels'])
        # Apply of status through the subresource.
        st = {'apiVersion': GROUP + '/' + VERSION, 'kind': 'MPIJob',
              'metadata': {'name': name},
              'status': {'startTime': '2024-01-01T00:00:00Z'}}
        r = self.raw('PATCH', path + '/status', json.dumps(st),
                     'application/apply-patch+yaml',
                     [('fieldManager', 'hpcbridge')])
        obj = json.loads(r[0].data)
        check(obj.get('status', {}).get('startTime') ==
              '2024-01-01T00:00:00Z', 'apply on /status')
        try:
            self.raw('PATCH', path, json.dumps(cfg),
                     'application/apply-patch+yaml')
            check(False, 'apply without fieldManager: 400')
        except ApiException as e:
            check(e.status == 400, 'apply without fieldManager: 400')
        self.delete(name)

    def operator(self):
        name = 'op-' + RUN
        self.create(mpijob(name, workers=2,
                           annotations={'kubemu.hpcbridge.io/run-ms':
                                        '1500'}))
        running = wait_for(lambda: cond(self.get(name), 'Running'))
        check(running and running['status'] == 'True' and
              running['reason'] == 'MPIJobRunning',
              'operator: Running when all pods run')
        pods = self.core.list_namespaced_pod(
            self.ns, label_selector='training.kubeflow.org/job-name=' + name)
        roles = sorted(p.metadata.labels['training.kubeflow.org/job-role']
                       for p in pods.items)
        check(roles == ['launcher', 'worker', 'worker'],
              'operator: a launcher and 2 workers: %r' % roles)
        done = wait_for(lambda: cond(self.get(name), 'Succeeded'))
        job = self.get(name)
        check(done and done['status'] == 'True' and
              done['reason'] == 'MPIJobSucceeded',
              'operator: Succeeded from the launcher')
        check(cond(job, 'Running')['status'] == 'False',
              'operator: Running goes False when it ends')
        check(job['status'].get('completionTime') and
              job['status'].get('startTime'),
              'operator: startTime and completionTime')
        check(job['status']['replicaStatuses']['Launcher'].get(
            'succeeded') == 1, 'operator: replicaStatuses')
        launcher = [p for p in self.core.list_namespaced_pod(
            self.ns, label_selector='training.kubeflow.org/job-name=%s,'
            'training.kubeflow.org/job-role=launcher' % name).items][0]
        check(launcher.status.phase == 'Succeeded' and
              launcher.status.container_statuses[0].state.terminated
              .exit_code == 0, 'launcher pod Succeeded with exit code 0')
        log = self.core.read_namespaced_pod_log(launcher.metadata.name,
                                                self.ns)
        check('simulated launcher' in log, 'pods/log: %r' % log[:80])
        evs = self.core.list_namespaced_event(
            self.ns, field_selector='involvedObject.name=' + name)
        reasons = [e.reason for e in evs.items]
        check('MPIJobCreated' in reasons and 'MPIJobSucceeded' in reasons,
              'events with a field selector: %r' % reasons)
        # A failing launcher.
        fname = 'fail-' + RUN
        self.create(mpijob(fname, annotations={
            'kubemu.hpcbridge.io/exit-code': '3',
            'kubemu.hpcbridge.io/run-ms': '300'}))
        failed = wait_for(lambda: cond(self.get(fname), 'Failed'))
        check(failed and failed['status'] == 'True' and
              failed['reason'].startswith('BackoffLimitExceeded'),
              'operator: Failed from the launcher: %r' %
              (failed and failed['reason']))
        # Suspended.
        sname = 'susp-' + RUN
        sj = mpijob(sname)
        sj['spec']['runPolicy']['suspend'] = True
        self.create(sj)
        s = wait_for(lambda: cond(self.get(sname), 'Suspended'))
        check(s and s['status'] == 'True' and s['reason'] ==
              'MPIJobSuspended', 'operator: Suspended')
        check(not self.core.list_namespaced_pod(
            self.ns, label_selector='training.kubeflow.org/job-name=' +
            sname).items, 'operator: no pods while suspended')
        # Not ours: managedBy another controller.
        mname = 'managed-' + RUN
        self.create(mpijob(mname, managed_by='hpcbridge.io/gateway'))
        time.sleep(1.0)
        m = self.get(mname)
        check(not m.get('status') and not self.core.list_namespaced_pod(
            self.ns, label_selector='training.kubeflow.org/job-name=' +
            mname).items, 'operator: leaves managedBy jobs alone')
        # The operator's own rules: a Warning event, nothing else.
        vname = 'rules-' + RUN
        vj = mpijob(vname)
        vj['spec']['mpiReplicaSpecs']['Launcher']['replicas'] = 2
        self.create(vj)
        ev = wait_for(lambda: [e for e in self.core.list_namespaced_event(
            self.ns, field_selector='involvedObject.name=' + vname).items
            if e.reason == 'ValidationError'])
        check(ev and ev[0].type == 'Warning',
              'operator: ValidationError event for its own rules')
        # Deletion takes the pods with it.
        self.delete(name)
        gone = wait_for(lambda: not self.core.list_namespaced_pod(
            self.ns, label_selector='training.kubeflow.org/job-name=' +
            name).items)
        check(gone, 'deleting an MPIJob deletes its pods')
        for n in (fname, sname, mname, vname):
            self.delete(n)

    def deletion(self):
        sel = 'training.kubeflow.org/job-name='

        def pods(n):
            return self.core.list_namespaced_pod(self.ns,
                                                 label_selector=sel + n).items
        long = {'kubemu.hpcbridge.io/run-ms': '60000'}
        # Foreground: the dependents go first, then the owner.
        fg = 'fg-' + RUN
        self.create(mpijob(fg, annotations=long))
        check(wait_for(lambda: len(pods(fg)) == 2), 'foreground: pods up')
        r = self.delete(fg, propagation_policy='Foreground')
        check((r.get('metadata') or {}).get('deletionTimestamp') and
              'foregroundDeletion' in r['metadata'].get('finalizers', []),
              'foreground: the owner is marked with its finalizer')
        gone = wait_for(lambda: not pods(fg) and not self._exists(fg))
        check(gone, 'foreground: pods, then the MPIJob, are gone')
        # Orphan: the pods stay.
        orph = 'orphan-' + RUN
        self.create(mpijob(orph, annotations=long))
        check(wait_for(lambda: len(pods(orph)) == 2), 'orphan: pods up')
        r = self.delete(orph, propagation_policy='Orphan')
        check(r.get('status') == 'Success', 'orphan: deleted (Status)')
        time.sleep(0.5)
        check(len(pods(orph)) == 2, 'orphan: the pods stay')
        self.core.delete_collection_namespaced_pod(
            self.ns, label_selector=sel + orph)
        check(wait_for(lambda: not pods(orph)),
              'deletecollection of pods by label')
        # A finalizer holds the object until it is removed.
        fin = 'fin-' + RUN
        job = mpijob(fin, managed_by='example.com/other')
        job['metadata']['finalizers'] = ['example.com/hold']
        self.create(job)
        r = self.delete(fin)
        check(r.get('metadata', {}).get('deletionTimestamp'),
              'finalizer: delete marks the object')
        check(self._exists(fin), 'finalizer: the object stays')
        self.co.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, fin,
            {'metadata': {'finalizers': None}})
        check(wait_for(lambda: not self._exists(fin), timeout=5),
              'finalizer: removing it deletes the object')
        # Preconditions.
        pre = 'pre-' + RUN
        made = self.create(mpijob(pre, managed_by='example.com/other'))
        expect_status(lambda: self.delete(pre, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid='not-the-uid'))),
            409, 'delete with a wrong uid precondition', 'Conflict',
            'Precondition failed')
        self.delete(pre, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(
                uid=made['metadata']['uid'])))
        check(not self._exists(pre), 'delete with the right uid')
        if not self.args.admin:
            return
        # Eviction of a worker fails the job, as the operator does.
        ev = 'evict-' + RUN
        self.create(mpijob(ev, annotations=long))
        check(wait_for(lambda: cond(self.get(ev), 'Running')),
              'eviction: the job runs')
        self.admin('POST', '/_hb/evict', {'namespace': self.ns,
                                          'name': ev + '-worker-0'})
        f = wait_for(lambda: cond(self.get(ev), 'Failed'))
        check(f and f['reason'] == 'MPIJobEvicted' and
              f['message'] == '1/1 workers are evicted',
              'eviction: Failed with MPIJobEvicted (%r)' %
              (f and f['reason']))
        self.delete(ev)

    def _exists(self, name):
        try:
            self.get(name)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    def core_objects(self):
        lease = client.V1Lease(
            metadata=client.V1ObjectMeta(name='lease-' + RUN),
            spec=client.V1LeaseSpec(holder_identity='me',
                                    lease_duration_seconds=15))
        made = self.coord.create_namespaced_lease(self.ns, lease)
        check(made.spec.holder_identity == 'me', 'lease create')
        made.spec.holder_identity = 'you'
        upd = self.coord.replace_namespaced_lease('lease-' + RUN, self.ns,
                                                  made)
        check(upd.spec.holder_identity == 'you', 'lease update')
        made.spec.holder_identity = 'them'
        expect_status(lambda: self.coord.replace_namespaced_lease(
            'lease-' + RUN, self.ns, made), 409, 'lease stale update',
            'Conflict')
        self.coord.delete_namespaced_lease('lease-' + RUN, self.ns)
        cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(
            name='cm-' + RUN), data={'a': '1'})
        self.core.create_namespaced_config_map(self.ns, cm)
        got = self.core.read_namespaced_config_map('cm-' + RUN, self.ns)
        check(got.data == {'a': '1'}, 'configmap round trip')
        p = self.core.patch_namespaced_config_map(
            'cm-' + RUN, self.ns, {'data': {'b': '2'}})
        check(p.data == {'a': '1', 'b': '2'},
              'strategic merge patch on a configmap')
        self.core.delete_namespaced_config_map('cm-' + RUN, self.ns)
        pod = client.V1Pod(metadata=client.V1ObjectMeta(name='pod-' + RUN),
                           spec=client.V1PodSpec(containers=[
                               client.V1Container(name='c', image='busybox')
                           ]))
        made = self.core.create_namespaced_pod(self.ns, pod)
        check(made.status.phase == 'Pending', 'a new pod is Pending')
        run = wait_for(lambda: self.core.read_namespaced_pod(
            'pod-' + RUN, self.ns).status.phase == 'Running')
        check(run, 'the pod runs')
        self.core.delete_namespaced_pod('pod-' + RUN, self.ns)
        gone = wait_for(lambda: not [p for p in self.core.list_namespaced_pod(
            self.ns).items if p.metadata.name == 'pod-' + RUN])
        check(gone, 'the pod is deleted')
        bad = client.V1Pod(metadata=client.V1ObjectMeta(name='bad-' + RUN),
                           spec=client.V1PodSpec(containers=[]))
        expect_status(lambda: self.core.create_namespaced_pod(self.ns, bad),
                      422, 'a pod without containers', 'Invalid')

    def trainjob(self):
        tj = {
            'apiVersion': 'trainer.kubeflow.org/v1alpha1',
            'kind': 'TrainJob',
            'metadata': {'name': 'tj-' + RUN},
            'spec': {'runtimeRef': {'name': 'torch-distributed'},
                     'trainer': {'numNodes': 2,
                                 'image': 'python:3.11-slim'}},
        }
        made = self.co.create_namespaced_custom_object(
            'trainer.kubeflow.org', 'v1alpha1', self.ns, 'trainjobs', tj)
        check(made['spec']['runtimeRef'].get('kind') ==
              'ClusterTrainingRuntime', 'TrainJob create with defaults')
        bad = copy.deepcopy(tj)
        bad['metadata']['name'] = 'tj2-' + RUN
        bad['spec']['trainer']['numNodes'] = 'two'
        expect_status(lambda: self.co.create_namespaced_custom_object(
            'trainer.kubeflow.org', 'v1alpha1', self.ns, 'trainjobs', bad),
            422, 'TrainJob schema violation', 'Invalid')
        self.co.delete_namespaced_custom_object(
            'trainer.kubeflow.org', 'v1alpha1', self.ns, 'trainjobs',
            'tj-' + RUN)

    # -- emulator only --------------------------------------------------
    def nodes(self):
        """The nodes kubemu.test.sh gives (cpu-1: 4 CPUs, gpu-1: 8 CPUs
        and 2 A100s, sick-1: not Ready) and the scheduler's fit."""
        names = [n.metadata.name for n in self.core.list_node().items]
        check(names == ['cpu-1', 'gpu-1', 'sick-1'], 'nodes listed: %s'
              % names)
        g = self.core.read_node('gpu-1')
        check(g.status.allocatable.get('nvidia.com/gpu') == '2' and
              g.status.capacity.get('cpu') == '8' and
              g.status.allocatable.get('memory') == '32Gi',
              'a node\'s allocatable and capacity')
        check(g.metadata.labels.get('nvidia.com/gpu.product') ==
              'NVIDIA-A100-SXM4-80GB', 'the GPU product label')
        ready = {n.metadata.name: [c.status for c in n.status.conditions
                                   if c.type == 'Ready']
                 for n in self.core.list_node().items}
        check(ready == {'cpu-1': ['True'], 'gpu-1': ['True'],
                        'sick-1': ['False']}, 'Ready conditions: %s' % ready)
        sel = self.core.list_node(label_selector='nvidia.com/gpu.product')
        check([n.metadata.name for n in sel.items] == ['gpu-1'],
              'nodes by label selector')
        w = watch.Watch()
        seen = [(e['type'], e['object'].metadata.name)
                for e in w.stream(self.core.list_node, timeout_seconds=1)]
        check(sorted(seen) == [('ADDED', 'cpu-1'), ('ADDED', 'gpu-1'),
                               ('ADDED', 'sick-1')], 'a watch of nodes')
        expect_status(lambda: self.core.delete_node('cpu-1'), 405,
                      'nodes are read-only', 'MethodNotAllowed')
        expect_status(lambda: self.core.read_node('nope'), 404,
                      'a missing node', 'NotFound')

        def pod(name, cpu, gpus=0):
            req = {'cpu': cpu, 'memory': '1Gi'}
            if gpus:
                req['nvidia.com/gpu'] = str(gpus)
            return client.V1Pod(
                metadata=client.V1ObjectMeta(name=name + '-' + RUN),
                spec=client.V1PodSpec(containers=[client.V1Container(
                    name='c', image='busybox',
                    resources=client.V1ResourceRequirements(
                        requests=req))]))

        def node_of(name):
            return self.core.read_namespaced_pod(name + '-' + RUN,
                                                 self.ns).spec.node_name

        for name, cpu, gpus in (('a', '3', 0), ('b', '6', 0),
                                ('c', '3000m', 0), ('d', '500m', 2)):
            self.core.create_namespaced_pod(self.ns, pod(name, cpu, gpus))
        check(wait_for(lambda: node_of('a') == 'cpu-1' and
                       node_of('b') == 'gpu-1' and
                       node_of('d') == 'gpu-1'),
              'first fit: a on cpu-1, b and d on gpu-1')
        c = self.core.read_namespaced_pod('c-' + RUN, self.ns)
        sc = [x for x in (c.status.conditions or [])
              if x.type == 'PodScheduled']
        check(c.spec.node_name is None and c.status.phase == 'Pending' and
              sc and sc[0].status == 'False' and
              sc[0].reason == 'Unschedulable' and
              '0/3 nodes are available: 2 Insufficient cpu' in sc[0].message,
              'a pod that fits nowhere is Unschedulable: %s'
              % (sc[0].message if sc else None))
        on = self.core.list_pod_for_all_namespaces(
            field_selector='spec.nodeName=gpu-1,'
            'status.phase!=Succeeded,status.phase!=Failed')
        check(sorted(p.metadata.name for p in on.items) ==
              ['b-' + RUN, 'd-' + RUN], 'pods on a node, across namespaces')
        self.core.delete_namespaced_pod('a-' + RUN, self.ns)
        check(wait_for(lambda: node_of('c') == 'cpu-1'),
              'an unschedulable pod is bound once room frees')
        check(wait_for(lambda: self.core.read_namespaced_pod(
            'c-' + RUN, self.ns).status.phase == 'Running'),
            'and then runs')
        for name in ('b', 'c', 'd'):
            self.core.delete_namespaced_pod(name + '-' + RUN, self.ns)

    def auth_and_tls(self):
        cfg = client.Configuration.get_default_copy()
        anon = client.Configuration.get_default_copy()
        anon.api_key = {}
        anon.api_key_prefix = {}
        co = client.CustomObjectsApi(client.ApiClient(anon))
        expect_status(lambda: co.list_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL), 401, 'no token',
            'Unauthorized')
        if self.args.restricted_token:
            tok, tns = self.args.restricted_token.split(':', 1)
            rc = client.Configuration.get_default_copy()
            rc.api_key = {'authorization': 'Bearer ' + tok}
            co = client.CustomObjectsApi(client.ApiClient(rc))
            lst = co.list_namespaced_custom_object(GROUP, VERSION, tns,
                                                   PLURAL)
            check(lst['kind'] == 'MPIJobList',
                  'a namespaced token works in its namespace')
            expect_status(lambda: co.list_namespaced_custom_object(
                GROUP, VERSION, self.ns, PLURAL), 403,
                'a namespaced token elsewhere', 'Forbidden',
                'cannot list resource "mpijobs"')
            expect_status(lambda: co.list_cluster_custom_object(
                GROUP, VERSION, PLURAL), 403,
                'a namespaced token at the cluster scope', 'Forbidden',
                'at the cluster scope')
        check(cfg.verify_ssl and cfg.host.startswith('https://'),
              'the kubeconfig gives HTTPS with verification')
        if self.args.wrong_ca:
            wc = client.Configuration.get_default_copy()
            wc.ssl_ca_cert = self.args.wrong_ca
            wc.retries = False
            try:
                client.VersionApi(client.ApiClient(wc)).get_code()
                check(False, 'a client with another CA is refused')
            except Exception as e:  # urllib3 wraps the SSL error
                check('CERTIFICATE_VERIFY_FAILED' in str(e) or
                      'certificate verify failed' in str(e),
                      'a client with another CA is refused')

    def faults(self):
        name = 'faults-' + RUN
        self.admin('POST', '/_hb/faults', {'error_500': 2,
                                           'path': '/mpijobs',
                                           'method': 'POST'})
        codes = []
        for _ in range(3):
            try:
                self.create(mpijob(name, managed_by='example.com/other'))
                codes.append(201)
            except ApiException as e:
                codes.append(e.status)
        check(codes == [500, 500, 201], 'faults: two 500s then success '
              '%r' % codes)
        self.admin('DELETE', '/_hb/faults')
        self.admin('POST', '/_hb/faults', {'error_429': 1, 'retry_after': 2,
                                           'path': '/mpijobs/' + name})
        nore = client.Configuration.get_default_copy()
        nore.retries = False
        co = client.CustomObjectsApi(client.ApiClient(nore))
        try:
            co.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL,
                                            name)
            check(False, 'faults: 429')
        except ApiException as e:
            check(e.status == 429 and e.headers.get('Retry-After') == '2',
                  'faults: 429 with Retry-After (%s)' % e.status)
        # urllib3 (under the default client) honours Retry-After.
        self.admin('POST', '/_hb/faults', {'error_429': 1})
        t0 = time.time()
        self.get(name)
        st = self.admin('GET', '/_hb/faults')
        check(time.time() - t0 >= 1.9 and st['injected_429'] == 2,
              'faults: the client waited Retry-After and retried')
        self.admin('DELETE', '/_hb/faults')
        self.admin('POST', '/_hb/faults', {'latency_ms': 300,
                                           'path': '/mpijobs/' + name})
        t0 = time.time()
        self.get(name)
        check(time.time() - t0 >= 0.3, 'faults: latency')
        self.admin('DELETE', '/_hb/faults')
        # A 410 injected into the next watch.
        self.admin('POST', '/_hb/faults', {'gone_next_watch': 1})
        rv = self.list()['metadata']['resourceVersion']
        try:
            for _ in watch.Watch().stream(
                    self.co.list_namespaced_custom_object, GROUP, VERSION,
                    self.ns, PLURAL, resource_version=rv,
                    timeout_seconds=2):
                pass
            check(False, 'faults: forced 410 on a watch')
        except ApiException as e:
            check(e.status == 410, 'faults: forced 410 on a watch')
        # Dropping watches cuts the stream.
        import threading
        result = {}

        def watcher():
            try:
                for _ in watch.Watch().stream(
                        self.co.list_namespaced_custom_object, GROUP,
                        VERSION, self.ns, PLURAL, resource_version=rv,
                        label_selector='never=' + RUN, timeout_seconds=20):
                    pass
                result['end'] = 'clean'
            except Exception as e:  # ProtocolError from urllib3
                result['end'] = type(e).__name__
        t = threading.Thread(target=watcher)
        t0 = time.time()
        t.start()
        time.sleep(0.5)
        self.admin('POST', '/_hb/faults', {'drop_watches': True})
        t.join(10)
        check(result.get('end') not in (None, 'clean') and
              time.time() - t0 < 5,
              'faults: a dropped watch breaks the stream (%r)' %
              result.get('end'))
        # Refused connections, then back.
        self.admin('POST', '/_hb/faults', {'refuse_ms': 1500})
        time.sleep(0.4)
        try:
            urllib.request.urlopen(self.args.admin + '/_hb/faults',
                                   timeout=2, context=ssl._create_unverified_context())
            check(False, 'faults: connections refused')
        except (urllib.error.URLError, ConnectionError, OSError):
            check(True, 'faults: connections refused')
        back = wait_for(lambda: self._alive(), timeout=10, step=0.2)
        check(back, 'faults: accepting again after refuse_ms')
        self.delete(name)

    def _alive(self):
        try:
            self.admin('GET', '/_hb/faults')
            return True
        except Exception:
            return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kubeconfig', required=True)
    ap.add_argument('--namespace', default='default')
    ap.add_argument('--admin', help="the emulator's base URL (emulator "
                    'only checks)')
    ap.add_argument('--restricted-token')
    ap.add_argument('--wrong-ca')
    ap.add_argument('--window', type=int, default=64)
    ap.add_argument('--only', help='comma list of check groups')
    args = ap.parse_args()
    config.load_kube_config(config_file=args.kubeconfig)
    print('python3-kubernetes %s' % kubernetes.__version__)
    s = Suite(args)
    groups = ['discovery', 'crud', 'validation', 'selectors_and_paging',
              'watches', 'gone', 'apply', 'operator', 'deletion',
              'core_objects',
              'trainjob']
    if args.admin:
        groups += ['auth_and_tls', 'faults']
    if args.only:
        groups = args.only.split(',')
    for g in groups:
        print('--- %s' % g)
        try:
            getattr(s, g)()
        except Exception as e:  # a crash in a group is a failure
            import traceback
            traceback.print_exc()
            check(False, '%s raised %s: %s' % (g, type(e).__name__, e))
    print('%d checks passed, %d failed' % (passed, len(failures)))
    for f in failures:
        print('  failed: ' + f)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
