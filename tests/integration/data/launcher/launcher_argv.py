"""Print the launcher pod's shell text from an MPIJob in JSON.

Reads the manifest (or a JSON array whose first item is the MPIJob),
takes the Launcher container's command + args, applies Kubernetes'
$(VAR) expansion against the container's env, checks that the result is
"sh -c TEXT", and writes TEXT to argv[2] and the container's env as
NUL-separated NAME=VALUE to argv[3].  When the launcher mounts the runtime
ConfigMap, the ConfigMap (in the same JSON array) is checked and its
runtime written to argv[4].
"""
import json
import sys


def expand(s, env):
    out, i = [], 0
    while i < len(s):
        if s[i] == '$' and i + 1 < len(s):
            if s[i + 1] == '$':
                out.append('$')
                i += 2
                continue
            if s[i + 1] == '(':
                j = s.find(')', i + 2)
                if j > 0 and s[i + 2:j] in env:
                    out.append(env[s[i + 2:j]])
                    i = j + 1
                    continue
        out.append(s[i])
        i += 1
    return ''.join(out)


docs = json.load(open(sys.argv[1], encoding='utf-8'))
if not isinstance(docs, list):
    docs = [docs]
doc = next(d for d in docs if d['kind'] == 'MPIJob')
pod = doc['spec']['mpiReplicaSpecs']['Launcher']['template']['spec']
c = pod['containers'][0]
# A launcher that mounts its runtime: the ConfigMap must be the one in the
# output, mounted where the launcher reads it; write its runtime out as the
# kubelet would (argv[4]).
vols = {v['name']: v for v in pod.get('volumes', [])}
mounts = c.get('volumeMounts', [])
if mounts:
    cms = [d for d in docs if d['kind'] == 'ConfigMap']
    assert len(cms) == 1, 'the launcher mounts a ConfigMap the output lacks'
    cm = cms[0]
    (m,) = mounts
    assert m['mountPath'] == '/opt/hpcbridge/launcher', m
    assert vols[m['name']]['configMap']['name'] == cm['metadata']['name']
    assert len(sys.argv) > 4, 'no path given for the mounted runtime'
    with open(sys.argv[4], 'w', encoding='utf-8', newline='') as f:
        f.write(cm['data']['runtime.sh'])
env = {e['name']: e['value'] for e in c.get('env', []) if 'value' in e}
argv = [expand(a, env) for a in (c.get('command') or []) +
        (c.get('args') or [])]
assert len(argv) == 3 and argv[0].endswith('sh') and argv[1] == '-c', argv[:2]
with open(sys.argv[2], 'w', encoding='utf-8', newline='') as f:
    f.write(argv[2])
with open(sys.argv[3], 'w', encoding='utf-8', newline='') as f:
    for k, v in env.items():
        f.write('%s=%s\0' % (k, v))
