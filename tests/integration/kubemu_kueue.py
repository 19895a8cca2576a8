"""The emulated Kueue as python3-kubernetes sees it (kubemu_kueue.test.sh).

A ClusterQueue with 4 cpus and preemption LowerPriority: a low-priority
MPIJob fills it and runs; a second low one waits (the visibility API shows
it at position 0); a high-priority one preempts the first (Evicted and
Preempted conditions, the MPIJob suspended again, its pods gone) and is
admitted; as jobs finish, the waiting ones are admitted.  A suspended
MPIJob without a queue gets no pods; a LocalQueue naming a missing
ClusterQueue leaves its workloads Inadmissible.

Usage: kubemu_kueue.py --kubeconfig FILE
"""
import argparse
import json
import sys
import time

from kubernetes import client, config

NS = 'default'
KQ = ('kueue.x-k8s.io', 'v1beta1')
MPI = ('kubeflow.org', 'v2beta1', 'mpijobs')
VIS = '/apis/visibility.kueue.x-k8s.io/v1beta1'
FAILED = []


def check(ok, what):
    print(('ok   ' if ok else 'FAIL ') + what)
    if not ok:
        FAILED.append(what)
    return ok


def wait(what, fn, timeout=20.0):
    """Poll fn until it returns something true; check it."""
    end = time.time() + timeout
    v = None
    while time.time() < end:
        v = fn()
        if v:
            break
        time.sleep(0.1)
    check(bool(v), what)
    return v


class Kueue:
    def __init__(self):
        self.api = client.ApiClient()
        self.co = client.CustomObjectsApi(self.api)
        self.core = client.CoreV1Api(self.api)

    def raw(self, path):
        r = self.api.call_api(path, 'GET', auth_settings=['BearerToken'],
                              _preload_content=False)
        return json.loads(r[0].data)

    def cluster(self, plural, body):
        return self.co.create_cluster_custom_object(KQ[0], KQ[1], plural,
                                                    body)

    def local(self, plural, body):
        return self.co.create_namespaced_custom_object(KQ[0], KQ[1], NS,
                                                       plural, body)

    def job(self, name):
        return self.co.get_namespaced_custom_object(MPI[0], MPI[1], NS,
                                                    MPI[2], name)

    def workload(self, job):
        for w in self.co.list_namespaced_custom_object(
                KQ[0], KQ[1], NS, 'workloads')['items']:
            refs = w['metadata'].get('ownerReferences') or []
            if refs and refs[0]['kind'] == 'MPIJob' and \
                    refs[0]['name'] == job:
                return w
        return None

    def pods(self, job):
        return [p for p in self.core.list_namespaced_pod(
            NS, label_selector='training.kubeflow.org/job-name=' + job).items
            if not p.metadata.deletion_timestamp]


def cond(obj, typ):
    for c in (obj or {}).get('status', {}).get('conditions') or []:
        if c['type'] == typ:
            return c
    return {}


def is_true(obj, typ):
    return cond(obj, typ).get('status') == 'True'


def mpijob(name, queue=None, prio=None, run_ms=60000, suspend=None,
           workers=3):
    labels = {}
    if queue:
        labels['kueue.x-k8s.io/queue-name'] = queue
    if prio:
        labels['kueue.x-k8s.io/priority-class'] = prio
    tmpl = {'spec': {'containers': [{
        'name': 'c', 'image': 'mpioperator/openmpi:v0.6.0',
        'resources': {'requests': {'cpu': '1', 'memory': '1Gi'}}}]}}
    body = {
        'apiVersion': 'kubeflow.org/v2beta1', 'kind': 'MPIJob',
        'metadata': {'name': name, 'labels': labels, 'annotations': {
            'kubemu.hpcbridge.io/run-ms': str(run_ms)}},
        'spec': {'slotsPerWorker': 1, 'runPolicy': {},
                 'mpiReplicaSpecs': {
                     'Launcher': {'replicas': 1, 'template': tmpl},
                     'Worker': {'replicas': workers, 'template': tmpl}}},
    }
    if suspend is not None:
        body['spec']['runPolicy']['suspend'] = suspend
    return body


def setup(k):
    k.cluster('resourceflavors', {
        'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'ResourceFlavor',
        'metadata': {'name': 'default-flavor'},
        'spec': {'nodeLabels': {'pool': 'batch'}}})
    k.cluster('clusterqueues', {
        'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'ClusterQueue',
        'metadata': {'name': 'cq'},
        'spec': {'namespaceSelector': {},
                 'preemption': {'withinClusterQueue': 'LowerPriority'},
                 'resourceGroups': [{
                     'coveredResources': ['cpu', 'memory',
                                          'nvidia.com/gpu'],
                     'flavors': [{'name': 'default-flavor', 'resources': [
                         {'name': 'cpu', 'nominalQuota': 4},
                         {'name': 'memory', 'nominalQuota': '64Gi'},
                         {'name': 'nvidia.com/gpu',
                          'nominalQuota': 0}]}]}]}})
    k.local('localqueues', {
        'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'LocalQueue',
        'metadata': {'name': 'lq', 'namespace': NS},
        'spec': {'clusterQueue': 'cq'}})
    for name, value in (('low', 100), ('high', 1000)):
        k.cluster('workloadpriorityclasses', {
            'apiVersion': 'kueue.x-k8s.io/v1beta1',
            'kind': 'WorkloadPriorityClass',
            'metadata': {'name': name}, 'value': value})
    cq = k.co.get_cluster_custom_object(KQ[0], KQ[1], 'clusterqueues', 'cq')
    check(cq['metadata']['name'] == 'cq' and
          'namespace' not in cq['metadata'],
          'a ClusterQueue is cluster-scoped')
    names = [r['name'] for r in
             k.raw('/apis/kueue.x-k8s.io/v1beta1')['resources']]
    check({'clusterqueues', 'localqueues', 'workloads', 'resourceflavors',
           'workloadpriorityclasses', 'workloads/status'} <= set(names),
          'discovery lists the Kueue resources')
    vis = k.raw(VIS)
    check([r['name'] for r in vis['resources']] ==
          ['clusterqueues/pendingworkloads', 'localqueues/pendingworkloads'],
          'discovery lists the visibility API')


def admitted(k, job):
    w = k.workload(job)
    return w if is_true(w, 'QuotaReserved') and is_true(w, 'Admitted') \
        else None


def running(k, job, n=4):
    return len([p for p in k.pods(job) if p.status.phase == 'Running']) == n


def scenario(k):
    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('low-1', 'lq', 'low', 8000))
    w = wait('low-1 gets a Workload', lambda: k.workload('low-1'))
    if not w:
        return
    check(w['metadata']['name'].startswith('mpijob-low-1-') and
          len(w['metadata']['name']) == len('mpijob-low-1-') + 5,
          'the Workload is named mpijob-<name>-<hash>: ' +
          w['metadata']['name'])
    ref = w['metadata']['ownerReferences'][0]
    check(ref['kind'] == 'MPIJob' and ref['name'] == 'low-1' and
          ref['uid'] == k.job('low-1')['metadata']['uid'],
          'the Workload is owned by the MPIJob')
    spec = w['spec']
    check([(p['name'], p['count']) for p in spec['podSets']] ==
          [('launcher', 1), ('worker', 3)],
          'pod sets launcher 1, worker 3')
    check(spec.get('priority') == 100 and
          spec.get('priorityClassName') == 'low' and
          spec.get('priorityClassSource') ==
          'kueue.x-k8s.io/workloadpriorityclass',
          'priority from the WorkloadPriorityClass')
    w = wait('low-1 admitted', lambda: admitted(k, 'low-1'))
    adm = (w or {}).get('status', {}).get('admission', {})
    psa = {p['name']: p for p in adm.get('podSetAssignments', [])}
    check(adm.get('clusterQueue') == 'cq' and
          psa.get('worker', {}).get('resourceUsage', {}).get('cpu') == '3'
          and psa.get('worker', {}).get('flavors', {}).get('cpu') ==
          'default-flavor' and psa.get('launcher', {}).get('count') == 1,
          'admission: ClusterQueue, flavors, usage')
    wait('low-1 unsuspended and running', lambda: running(k, 'low-1'))
    tmpl = k.job('low-1')['spec']['mpiReplicaSpecs']['Worker']['template']
    check(tmpl['spec'].get('nodeSelector') == {'pool': 'batch'},
          "the flavor's nodeLabels join the pod templates' nodeSelector")
    check(all(p.spec.node_selector == {'pool': 'batch'}
              for p in k.pods('low-1')), 'and the pods have it')

    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('low-2', 'lq', 'low', 8000))
    check(k.job('low-2')['spec']['runPolicy'].get('suspend') is True,
          'a queued MPIJob is created suspended (webhook)')
    wait('low-2 pending with reason Pending',
         lambda: cond(k.workload('low-2'), 'QuotaReserved').get('reason')
         == 'Pending')
    check('insufficient unused quota for cpu' in
          cond(k.workload('low-2'), 'QuotaReserved').get('message', ''),
          'the pending message names the resource')
    check(not k.pods('low-2'), 'a pending MPIJob has no pods')
    items = k.raw(VIS + '/clusterqueues/cq/pendingworkloads')
    it = items['items']
    check(items['kind'] == 'PendingWorkloadsSummary' and len(it) == 1 and
          it[0]['positionInClusterQueue'] == 0 and
          it[0]['positionInLocalQueue'] == 0 and it[0]['priority'] == 100
          and it[0]['localQueueName'] == 'lq' and
          it[0]['metadata']['ownerReferences'][0]['name'] == 'low-2',
          'visibility: low-2 pending at position 0')
    lqv = k.raw(VIS + '/namespaces/default/localqueues/lq/pendingworkloads'
                '?offset=1')
    check(lqv['items'] == [], 'visibility: offset past the end is empty')
    lqs = wait('LocalQueue counts',
               lambda: (lambda s: s if s.get('pendingWorkloads') == 1 and
                        s.get('admittedWorkloads') == 1 else None)(
                   k.co.get_namespaced_custom_object(
                       KQ[0], KQ[1], NS, 'localqueues', 'lq').get('status',
                                                                  {})))

    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('high', 'lq', 'high', 2000))
    wait('high admitted', lambda: admitted(k, 'high'))
    w1 = k.workload('low-1')
    ev, pr = cond(w1, 'Evicted'), cond(w1, 'Preempted')
    check(ev.get('status') == 'True' and ev.get('reason') == 'Preempted'
          and pr.get('status') == 'True' and
          pr.get('reason') == 'InClusterQueue',
          'low-1: Evicted (Preempted), Preempted (InClusterQueue)')
    check(not is_true(w1, 'QuotaReserved') and
          not is_true(w1, 'Admitted') and
          'admission' not in w1.get('status', {}),
          'low-1 lost its reservation')
    j1 = wait('low-1 suspended again', lambda: (lambda j: j if j['spec'][
        'runPolicy'].get('suspend') and is_true(j, 'Suspended') else None)(
            k.job('low-1')))
    if j1:
        sc = cond(j1, 'Suspended')
        check(sc.get('reason') == 'MPIJobSuspended' and
              cond(j1, 'Running').get('status') == 'False',
              'low-1: Suspended MPIJobSuspended, Running False')
    wait('low-1 pods deleted', lambda: not k.pods('low-1'))
    tmpl = k.job('low-1')['spec']['mpiReplicaSpecs']['Worker']['template']
    check('nodeSelector' not in tmpl['spec'],
          'stopping the job restores its nodeSelector')
    wait('high unsuspended and running', lambda: running(k, 'high'))
    it = k.raw(VIS + '/clusterqueues/cq/pendingworkloads')['items']
    check([i['metadata']['ownerReferences'][0]['name'] for i in it] ==
          ['low-1', 'low-2'] and [i['positionInClusterQueue'] for i in it]
          == [0, 1], 'visibility: low-1 then low-2 pending')

    # high finishes: low-1 comes back (from the start), then low-2.
    wait('high finishes', lambda: is_true(k.workload('high'), 'Finished'),
         30)
    wait('low-1 readmitted', lambda: admitted(k, 'low-1'), 30)
    j1 = wait('low-1 resumed', lambda: (lambda j: j if cond(
        j, 'Suspended').get('reason') == 'MPIJobResumed' else None)(
            k.job('low-1')))
    check(cond(j1, 'Suspended').get('status') == 'False',
          'low-1: Suspended False after resume')
    wait('low-1 running again', lambda: running(k, 'low-1'))
    check(not admitted(k, 'low-2'), 'low-2 still waits')
    wait('low-1 finishes', lambda: is_true(k.workload('low-1'), 'Finished'),
         30)
    wait('low-2 admitted', lambda: admitted(k, 'low-2'), 30)
    wait('low-2 running', lambda: running(k, 'low-2'))
    cq = k.co.get_cluster_custom_object(KQ[0], KQ[1], 'clusterqueues', 'cq')
    st = cq.get('status', {})
    check(st.get('admittedWorkloads') == 1 and
          st.get('pendingWorkloads') == 0 and
          is_true(cq, 'Active'), 'ClusterQueue counts and Active')


def no_queue(k):
    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('plain', suspend=True))
    j = wait('a suspended MPIJob without a queue: Suspended',
             lambda: (lambda j: j if is_true(j, 'Suspended') else None)(
                 k.job('plain')))
    check(cond(j, 'Suspended').get('reason') == 'MPIJobSuspended',
          'reason MPIJobSuspended')
    time.sleep(1)
    check(not k.pods('plain'), 'it has no pods')
    check(k.workload('plain') is None, 'and no Workload')


def missing_cq(k):
    k.local('localqueues', {
        'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'LocalQueue',
        'metadata': {'name': 'orphan', 'namespace': NS},
        'spec': {'clusterQueue': 'nowhere'}})
    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('lost', 'orphan'))
    c = wait('a LocalQueue with a missing ClusterQueue: Inadmissible',
             lambda: (lambda c: c if c.get('reason') == 'Inadmissible'
                      else None)(cond(k.workload('lost'), 'QuotaReserved')))
    check('nowhere' in (c or {}).get('message', ''),
          'the message names the ClusterQueue')
    lq = wait('its LocalQueue is not Active', lambda: (
        lambda q: q if cond(q, 'Active').get('status') == 'False' else None)(
            k.co.get_namespaced_custom_object(KQ[0], KQ[1], NS,
                                              'localqueues', 'orphan')))
    check(cond(lq, 'Active').get('reason') == 'ClusterQueueDoesNotExist',
          'reason ClusterQueueDoesNotExist')
    k.co.delete_namespaced_custom_object(*MPI[:2], NS, MPI[2], 'lost')
    wait('the Workload goes with its MPIJob',
         lambda: k.workload('lost') is None)
    # Nothing runs now: Kueue's passes must settle, writing nothing.
    time.sleep(0.5)
    rv = k.raw('/_hb/stats')['resourceVersion']
    time.sleep(1.5)
    check(k.raw('/_hb/stats')['resourceVersion'] == rv,
          'Kueue settles: no writes while nothing changes')


def strict_fifo(k):
    """StrictFIFO: a head that does not fit blocks the queue; the
    LocalQueue view numbers its own workloads."""
    k.cluster('clusterqueues', {
        'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'ClusterQueue',
        'metadata': {'name': 'strict'},
        'spec': {'queueingStrategy': 'StrictFIFO', 'resourceGroups': [{
            'coveredResources': ['cpu', 'memory'],
            'flavors': [{'name': 'default-flavor', 'resources': [
                {'name': 'cpu', 'nominalQuota': '2'},
                {'name': 'memory', 'nominalQuota': '8Gi'}]}]}]}})
    for lq in ('lq-a', 'lq-b'):
        k.local('localqueues', {
            'apiVersion': 'kueue.x-k8s.io/v1beta1', 'kind': 'LocalQueue',
            'metadata': {'name': lq, 'namespace': NS},
            'spec': {'clusterQueue': 'strict'}})
    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('big', 'lq-a'))
    wait('big waits', lambda: cond(k.workload('big'),
                                   'QuotaReserved').get('reason') ==
         'Pending')
    time.sleep(1.1)  # a later creationTimestamp for small
    k.co.create_namespaced_custom_object(*MPI[:2], NS, MPI[2],
                                         mpijob('small', 'lq-b', workers=1))
    c = wait('StrictFIFO: small waits behind big', lambda: (
        lambda c: c if c.get('reason') == 'Pending' else None)(
            cond(k.workload('small'), 'QuotaReserved')))
    check('StrictFIFO' in (c or {}).get('message', ''),
          'the message says it waits for the head')
    it = k.raw(VIS + '/clusterqueues/strict/pendingworkloads')['items']
    check([(i['localQueueName'], i['positionInClusterQueue'],
            i['positionInLocalQueue']) for i in it] ==
          [('lq-a', 0, 0), ('lq-b', 1, 0)],
          'visibility: big at 0, small at 1 (0 in its LocalQueue)')
    it = k.raw(VIS + '/namespaces/default/localqueues/lq-b/'
               'pendingworkloads?limit=5')['items']
    check(len(it) == 1 and it[0]['positionInClusterQueue'] == 1 and
          it[0]['positionInLocalQueue'] == 0,
          'visibility of a LocalQueue: its own workloads only')
    it = k.raw(VIS + '/clusterqueues/strict/pendingworkloads?limit=1'
               '&offset=1')['items']
    check([i['localQueueName'] for i in it] == ['lq-b'],
          'visibility: limit and offset')
    k.co.patch_cluster_custom_object(
        KQ[0], KQ[1], 'clusterqueues', 'strict',
        {'spec': {'queueingStrategy': 'BestEffortFIFO'}})
    wait('BestEffortFIFO: small admitted past big',
         lambda: admitted(k, 'small'))
    check(not admitted(k, 'big'), 'big still waits')
    for j in ('big', 'small'):
        k.co.delete_namespaced_custom_object(*MPI[:2], NS, MPI[2], j)
    wait('their Workloads go', lambda: not k.workload('big') and
         not k.workload('small'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--kubeconfig', required=True)
    a = ap.parse_args()
    config.load_kube_config(a.kubeconfig)
    k = Kueue()
    setup(k)
    no_queue(k)
    missing_cq(k)
    strict_fifo(k)
    scenario(k)
    print('%d failed' % len(FAILED))
    return 1 if FAILED else 0


if __name__ == '__main__':
    sys.exit(main())
