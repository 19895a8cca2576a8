"""A small kubectl for the tests, on python3-kubernetes ($KUBECONFIG).

  kube.py names [SELECTOR]        MPIJob names in the namespace, one a line
  kube.py get NAME                the MPIJob as JSON (exit 3 if not found)
  kube.py phase NAME              its last True condition (Created, Running,
                                  Succeeded, Failed), or "none"
  kube.py labels NAME             its labels, KEY=VALUE a line
  kube.py delete NAME             delete it (exit 3 if not found)
  kube.py create FILE             create the MPIJob in FILE (JSON); print
                                  its uid
  kube.py status NAME             its .status as JSON ({} when none)
  kube.py pods SELECTOR           pods in the namespace, "NAME NODE PHASE"
                                  a line (NODE "-" when unbound)
  kube.py faults URL [JSON]       POST JSON to the emulator's /_hb/faults,
                                  or DELETE them without JSON
  kube.py counts URL              the emulator's injected-fault counts (JSON)
"""
import json
import ssl
import sys
import urllib.request

from kubernetes import client, config
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = 'kubeflow.org', 'v2beta1', 'mpijobs'
NS = 'default'


def admin(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + '/_hb/faults', data=data,
                                 method=method)
    req.add_header('Content-Type', 'application/json')
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return json.loads(r.read() or b'{}')


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd in ('faults', 'counts'):
        if cmd == 'counts':
            print(json.dumps(admin('GET', args[0])))
        elif len(args) > 1:
            admin('POST', args[0], json.loads(args[1]))
        else:
            admin('DELETE', args[0])
        return 0
    config.load_kube_config()
    api = client.CustomObjectsApi()
    try:
        if cmd == 'names':
            sel = args[0] if args else None
            items = api.list_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, label_selector=sel)['items']
            for it in items:
                print(it['metadata']['name'])
        elif cmd == 'get':
            print(json.dumps(api.get_namespaced_custom_object(
                GROUP, VERSION, NS, PLURAL, args[0])))
        elif cmd == 'phase':
            obj = api.get_namespaced_custom_object(GROUP, VERSION, NS,
                                                   PLURAL, args[0])
            last = 'none'
            for c in (obj.get('status') or {}).get('conditions') or []:
                if c.get('status') == 'True':
                    last = c['type']
            print(last)
        elif cmd == 'labels':
            obj = api.get_namespaced_custom_object(GROUP, VERSION, NS,
                                                   PLURAL, args[0])
            for k, v in sorted((obj['metadata'].get('labels') or {}).items()):
                print('%s=%s' % (k, v))
        elif cmd == 'create':
            with open(args[0]) as f:
                body = json.load(f)
            obj = api.create_namespaced_custom_object(GROUP, VERSION, NS,
                                                      PLURAL, body)
            print(obj['metadata']['uid'])
        elif cmd == 'status':
            obj = api.get_namespaced_custom_object_status(
                GROUP, VERSION, NS, PLURAL, args[0])
            print(json.dumps(obj.get('status') or {}, sort_keys=True))
        elif cmd == 'pods':
            core = client.CoreV1Api()
            for p in core.list_namespaced_pod(
                    NS, label_selector=args[0]).items:
                print('%s %s %s' % (p.metadata.name, p.spec.node_name or '-',
                                    p.status.phase))
        elif cmd == 'delete':
            api.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL,
                                                args[0])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except ApiException as e:
        if e.status == 404:
            return 3
        raise
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
