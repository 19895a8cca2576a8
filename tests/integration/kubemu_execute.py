"""Run hpcbridge-translated MPIJobs on hb-kubemu in execute mode.

Reads `hpcbridge translate --with-runtime --to mpijob --format json`
output (a JSON array: the launcher runtime's ConfigMap, then the MPIJob),
creates both with python3-kubernetes, follows the launcher pod's log while
it runs, and waits for the MPIJob's final condition.

Usage: kubemu_execute.py KUBECONFIG MANIFEST.json EXPECT OUT_LOG
  EXPECT is "Succeeded" or "Failed:CODE" (the launcher's exit code).
Prints the log to OUT_LOG; exits 0 when the job ended as expected.
"""
import json
import sys
import threading
import time

from kubernetes import client, config, watch

GROUP, VERSION, PLURAL = 'kubeflow.org', 'v2beta1', 'mpijobs'
NS = 'default'


def main():
    kubeconfig, manifest, expect, out_log = sys.argv[1:5]
    config.load_kube_config(config_file=kubeconfig)
    co = client.CustomObjectsApi()
    core = client.CoreV1Api()
    docs = json.load(open(manifest, encoding='utf-8'))
    cm = next(d for d in docs if d['kind'] == 'ConfigMap')
    job = next(d for d in docs if d['kind'] == 'MPIJob')
    name = job['metadata']['name']
    try:
        core.create_namespaced_config_map(NS, cm)
    except client.ApiException as e:
        if e.status != 409:  # the runtime is applied once per namespace
            raise
    rv = co.list_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL)['metadata']['resourceVersion']
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, job)

    # Follow the launcher's log from the moment its pod runs.
    sel = ('training.kubeflow.org/job-name=%s,'
           'training.kubeflow.org/job-role=launcher' % name)
    log = []
    pod_name = {}

    def follow():
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_pod, NS, label_selector=sel,
                           timeout_seconds=120):
            pod = ev['object']
            if pod.status.phase in ('Running', 'Succeeded', 'Failed'):
                pod_name['name'] = pod.metadata.name
                w.stop()
        if 'name' not in pod_name:
            return
        resp = core.read_namespaced_pod_log(pod_name['name'], NS,
                                            follow=True,
                                            _preload_content=False)
        for chunk in resp.stream(4096):
            log.append(chunk.decode('utf-8', 'replace'))

    t = threading.Thread(target=follow, daemon=True)
    t.start()

    final = None
    w = watch.Watch()
    deadline = time.time() + 240
    while final is None and time.time() < deadline:
        for ev in w.stream(co.list_namespaced_custom_object, GROUP, VERSION,
                           NS, PLURAL, resource_version=rv,
                           field_selector='metadata.name=' + name,
                           timeout_seconds=30):
            obj = ev['object']
            rv = obj['metadata']['resourceVersion']
            conds = {c['type']: c for c in
                     (obj.get('status') or {}).get('conditions') or []}
            for ctype in ('Succeeded', 'Failed'):
                if conds.get(ctype, {}).get('status') == 'True':
                    final = (ctype, conds[ctype])
            if final:
                w.stop()
    t.join(30)
    text = ''.join(log)
    with open(out_log, 'w', encoding='utf-8') as f:
        f.write(text)
    if not final:
        print('FAIL: no final condition for %s' % name)
        return 1
    pod = core.read_namespaced_pod(pod_name['name'], NS)
    term = pod.status.container_statuses[0].state.terminated
    print('MPIJob %s: %s (%s: %s); launcher %s exit code %s' %
          (name, final[0], final[1]['reason'], final[1]['message'],
           pod.metadata.name, term.exit_code))
    if expect == 'Succeeded':
        ok = (final[0] == 'Succeeded' and
              final[1]['reason'] == 'MPIJobSucceeded' and
              pod.status.phase == 'Succeeded' and term.exit_code == 0)
    else:
        code = int(expect.split(':', 1)[1])
        ok = (final[0] == 'Failed' and pod.status.phase == 'Failed' and
              term.exit_code == code)
    # The followed log and a plain read agree.
    plain = core.read_namespaced_pod_log(pod_name['name'], NS)
    if plain != text:
        print('FAIL: the followed log differs from the log read after')
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
