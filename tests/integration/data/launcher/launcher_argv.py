"""Print the launcher pod's shell text from an MPIJob in JSON.

Reads the manifest (or a JSON array whose first item is the MPIJob),
takes the Launcher container's command + args, applies Kubernetes'
$(VAR) expansion against the container's env, checks that the result is
"sh -c TEXT", and writes TEXT to argv[2] and the container's env as
NUL-separated NAME=VALUE to argv[3].
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


doc = json.load(open(sys.argv[1], encoding='utf-8'))
if isinstance(doc, list):
    doc = doc[0]
assert doc['kind'] == 'MPIJob', doc.get('kind')
c = doc['spec']['mpiReplicaSpecs']['Launcher']['template']['spec'][
    'containers'][0]
env = {e['name']: e['value'] for e in c.get('env', []) if 'value' in e}
argv = [expand(a, env) for a in (c.get('command') or []) +
        (c.get('args') or [])]
assert len(argv) == 3 and argv[0].endswith('sh') and argv[1] == '-c', argv[:2]
with open(sys.argv[2], 'w', encoding='utf-8', newline='') as f:
    f.write(argv[2])
with open(sys.argv[3], 'w', encoding='utf-8', newline='') as f:
    for k, v in env.items():
        f.write('%s=%s\0' % (k, v))
