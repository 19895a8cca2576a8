#!/usr/bin/python3
"""Write openapi_builtin.json: the OpenAPI v2 definitions of the built-in
kinds hb-kubemu serves (Pod, ConfigMap, Secret, Namespace, Node, Event,
Lease, their lists, Status, DeleteOptions) and every type they reach, with
the API server's definition names, field descriptions, required fields,
x-kubernetes-group-version-kind on the kinds and the strategic merge patch
keys on the lists that have them.

The types and descriptions come from python3-kubernetes' generated models
(they are generated from the API server's own OpenAPI document).  Run it
again after upgrading that package:

    /usr/bin/python3 tests/kubemu/gen_openapi_builtin.py > \
        tests/kubemu/openapi_builtin.json
"""
import inspect
import json
import re
import sys

import kubernetes
import kubernetes.client.models as models

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CORE = "io.k8s.api.core.v1."
COORD = "io.k8s.api.coordination.v1."

# Top-level kinds: model, group, version, kind, description.
KINDS = [
    ("V1Pod", "", "v1", "Pod",
     "Pod is a collection of containers that can run on a host. This "
     "resource is created by clients and scheduled onto hosts."),
    ("V1ConfigMap", "", "v1", "ConfigMap",
     "ConfigMap holds configuration data for pods to consume."),
    ("V1Secret", "", "v1", "Secret",
     "Secret holds secret data of a certain type. The total bytes of the "
     "values in the Data field must be less than MaxSecretSize bytes."),
    ("V1Namespace", "", "v1", "Namespace",
     "Namespace provides a scope for Names. Use of multiple namespaces is "
     "optional."),
    ("V1Node", "", "v1", "Node",
     "Node is a worker node in Kubernetes. Each node will have a unique "
     "identifier in the cache (i.e. in etcd)."),
    ("CoreV1Event", "", "v1", "Event",
     "Event is a report of an event somewhere in the cluster.  Events have "
     "a limited retention time and triggers and messages may evolve with "
     "time."),
    ("V1Lease", "coordination.k8s.io", "v1", "Lease",
     "Lease defines a lease concept."),
    ("V1Status", "", "v1", "Status",
     "Status is a return value for calls that don't return other "
     "objects."),
    ("V1DeleteOptions", "", "v1", "DeleteOptions",
     "DeleteOptions may be provided when deleting an API object."),
]

# Types outside the core group, by model name.
GROUP_OF = {
    "V1ObjectMeta": META, "V1ListMeta": META, "V1OwnerReference": META,
    "V1ManagedFieldsEntry": META, "V1Status": META,
    "V1StatusDetails": META, "V1StatusCause": META,
    "V1DeleteOptions": META, "V1Preconditions": META,
    "V1LabelSelector": META, "V1LabelSelectorRequirement": META,
    "V1Lease": COORD, "V1LeaseList": COORD, "V1LeaseSpec": COORD,
}

# Strategic merge patch: (definition, field) -> (strategy, merge key).
PATCH = {
    ("PodSpec", "containers"): ("merge", "name"),
    ("PodSpec", "initContainers"): ("merge", "name"),
    ("PodSpec", "ephemeralContainers"): ("merge", "name"),
    ("PodSpec", "volumes"): ("merge,retainKeys", "name"),
    ("PodSpec", "imagePullSecrets"): ("merge", "name"),
    ("PodSpec", "hostAliases"): ("merge", "ip"),
    ("PodSpec", "topologySpreadConstraints"): ("merge", "topologyKey"),
    ("Container", "env"): ("merge", "name"),
    ("Container", "ports"): ("merge", "containerPort"),
    ("Container", "volumeMounts"): ("merge", "mountPath"),
    ("Container", "volumeDevices"): ("merge", "devicePath"),
    ("EphemeralContainer", "env"): ("merge", "name"),
    ("EphemeralContainer", "volumeMounts"): ("merge", "mountPath"),
    ("EphemeralContainer", "volumeDevices"): ("merge", "devicePath"),
    ("PodStatus", "conditions"): ("merge", "type"),
    ("NodeStatus", "conditions"): ("merge", "type"),
    ("NodeStatus", "addresses"): ("merge", "type"),
    ("NodeSpec", "podCIDRs"): ("merge", None),
    ("ObjectMeta", "finalizers"): ("merge", None),
    ("ObjectMeta", "ownerReferences"): ("merge", "uid"),
    ("NamespaceSpec", "finalizers"): ("merge", None),
}

# The models lose the descriptions of fields that name another type:
# those of the fields users reach most, as the API server has them.
META_DOC = ("Standard object's metadata. More info: https://git.k8s.io/"
            "community/contributors/devel/sig-architecture/"
            "api-conventions.md#metadata")
SPEC_DOC = ("Specification of the desired behavior of the %s. More info: "
            "https://git.k8s.io/community/contributors/devel/"
            "sig-architecture/api-conventions.md"
            "#spec-and-status")
STATUS_DOC = ("Most recently observed status of the %s. This data may not "
              "be up to date. Populated by the system. Read-only. More "
              "info: https://git.k8s.io/community/contributors/devel/"
              "sig-architecture/api-conventions.md#spec-and-status")
REF_DOCS = {
    ("PodSpec", "securityContext"):
        "SecurityContext holds pod-level security attributes and common "
        "container settings. Optional: Defaults to empty.  See type "
        "description for default values of each field.",
    ("Container", "securityContext"):
        "SecurityContext defines the security options the container "
        "should be run with. If set, the fields of SecurityContext "
        "override the equivalent fields of PodSecurityContext. More info: "
        "https://kubernetes.io/docs/tasks/configure-pod-container/"
        "security-context/",
    ("Container", "resources"):
        "Compute Resources required by this container. Cannot be updated. "
        "More info: https://kubernetes.io/docs/concepts/configuration/"
        "manage-resources-containers/",
    ("SecurityContext", "capabilities"):
        "The capabilities to add/drop when running containers. Defaults to "
        "the default set of capabilities granted by the container runtime.",
    ("SecurityContext", "seccompProfile"):
        "The seccomp options to use by this container. If seccomp options "
        "are provided at both the pod & container level, the container "
        "options override the pod options.",
    ("PodSecurityContext", "seccompProfile"):
        "The seccomp options to use by the containers in this pod.",
    ("PodSpec", "affinity"): "If specified, the pod's scheduling "
        "constraints",
    ("Volume", "persistentVolumeClaim"):
        "PersistentVolumeClaimVolumeSource represents a reference to a "
        "PersistentVolumeClaim in the same namespace.",
    ("Volume", "emptyDir"):
        "EmptyDir represents a temporary directory that shares a pod's "
        "lifetime.",
    ("Container", "livenessProbe"):
        "Periodic probe of container liveness. Container will be "
        "restarted if the probe fails. Cannot be updated. More info: "
        "https://kubernetes.io/docs/concepts/workloads/pods/"
        "pod-lifecycle#container-probes",
    ("Container", "readinessProbe"):
        "Periodic probe of container service readiness. Container will be "
        "removed from service endpoints if the probe fails. Cannot be "
        "updated. More info: https://kubernetes.io/docs/concepts/"
        "workloads/pods/pod-lifecycle#container-probes",
    ("Container", "startupProbe"):
        "StartupProbe indicates that the Pod has successfully initialized. "
        "If specified, no other probes are executed until this completes "
        "successfully.",
    ("Container", "lifecycle"):
        "Actions that the management system should take in response to "
        "container lifecycle events. Cannot be updated.",
    ("PodSpec", "dnsConfig"):
        "Specifies the DNS parameters of a pod. Parameters specified here "
        "will be merged to the generated DNS configuration based on "
        "DNSPolicy.",
    ("SecurityContext", "seLinuxOptions"):
        "The SELinux context to be applied to the container. If "
        "unspecified, the container runtime will allocate a random SELinux "
        "context for each container.",
    ("PodSecurityContext", "seLinuxOptions"):
        "The SELinux context to be applied to all containers. If "
        "unspecified, the container runtime will allocate a random SELinux "
        "context for each container.",
    ("Volume", "configMap"):
        "ConfigMap represents a configMap that should populate this "
        "volume",
    ("Volume", "secret"):
        "Secret represents a secret that should populate this volume. More "
        "info: https://kubernetes.io/docs/concepts/storage/volumes#secret",
    ("Volume", "projected"):
        "Items for all in one resources secrets, configmaps, and downward "
        "API",
    ("Volume", "downwardAPI"):
        "DownwardAPI represents downward API about the pod that should "
        "populate this volume",
    ("Volume", "nfs"):
        "NFS represents an NFS mount on the host that shares a pod's "
        "lifetime More info: https://kubernetes.io/docs/concepts/storage/"
        "volumes#nfs",
    ("Volume", "csi"):
        "CSI (Container Storage Interface) represents ephemeral storage "
        "that is handled by certain external CSI drivers.",
    ("Volume", "ephemeral"):
        "Ephemeral represents a volume that is handled by a cluster "
        "storage driver. The volume's lifecycle is tied to the pod that "
        "defines it - it will be created before the pod starts, and "
        "deleted when the pod is removed.",
    ("Event", "involvedObject"): "The object that this event is about.",
    ("Event", "source"):
        "The component reporting this event. Should be a short machine "
        "understandable string.",
    ("Event", "related"): "Optional secondary object for more complex "
        "actions.",
    ("Event", "series"):
        "Data about the Event series this event represents or nil if it's "
        "a singleton Event.",
    ("NodeStatus", "nodeInfo"):
        "Set of ids/uuids to uniquely identify the node. More info: "
        "https://kubernetes.io/docs/concepts/nodes/node/#info",
    ("NodeStatus", "daemonEndpoints"):
        "Endpoints of daemons running on the Node.",
    ("Probe", "exec"): "Exec specifies the action to take.",
    ("Probe", "httpGet"): "HTTPGet specifies the http request to perform.",
    ("Probe", "tcpSocket"): "TCPSocket specifies an action involving a "
        "TCP port.",
    ("Status", "details"):
        "Extended data associated with the reason.  Each reason may define "
        "its own extended details. This field is optional and the data "
        "returned is not guaranteed to conform to any schema except that "
        "defined by the reason type.",
    ("Volume", "hostPath"):
        "HostPath represents a pre-existing file or directory on the host "
        "machine that is directly exposed to the container.",
}

# IntOrString fields (the models call them "object").
INT_OR_STRING = {"port", "targetPort", "maxSkew"}

defs = {}
queue = []


def def_name(model):
    if model in GROUP_OF:
        prefix = GROUP_OF[model]
    else:
        prefix = CORE
    short = re.sub(r"^(CoreV1|V1)", "", model)
    return prefix + short


def ref(model):
    if model not in defs and model not in queue:
        queue.append(model)
    return {"$ref": "#/definitions/" + def_name(model)}


def type_schema(t, field):
    if t == "str":
        return {"type": "string"}
    if t == "int":
        return {"type": "integer", "format": "int64"}
    if t == "float":
        return {"type": "number", "format": "double"}
    if t == "bool":
        return {"type": "boolean"}
    if t == "datetime":
        return {"type": "string", "format": "date-time"}
    if t == "object":
        if field in INT_OR_STRING:
            return {"type": "string", "format": "int-or-string",
                    "x-kubernetes-int-or-string": True}
        return {"type": "object"}
    m = re.match(r"list\[(.*)\]$", t)
    if m:
        return {"type": "array", "items": type_schema(m.group(1), "")}
    m = re.match(r"dict\(str, (.*)\)$", t)
    if m:
        return {"type": "object",
                "additionalProperties": type_schema(m.group(1), "")}
    return ref(t)


def doc_of(prop):
    doc = inspect.getdoc(prop.fget) or ""
    parts = [p.strip() for p in doc.split("\n\n")]
    if len(parts) < 3:
        return ""
    text = parts[1]
    return re.sub(r"\s*# noqa: E501$", "", text).strip()


def build(model):
    cls = getattr(models, model)
    short = def_name(model).rsplit(".", 1)[1]
    props, required = {}, []
    for attr, t in cls.openapi_types.items():
        name = cls.attribute_map[attr]
        s = type_schema(t, name)
        desc = doc_of(getattr(cls, attr)) or REF_DOCS.get((short, name))
        if not desc and name == "metadata":
            desc = META_DOC
        elif not desc and name in ("spec", "status") and "$ref" in s:
            kind = short.lower() if short != "Event" else "event"
            desc = (SPEC_DOC if name == "spec" else STATUS_DOC) % kind
        if desc:
            s = dict(s, description=desc)
        pm = PATCH.get((short, name))
        if pm:
            s["x-kubernetes-patch-strategy"] = pm[0]
            if pm[1]:
                s["x-kubernetes-patch-merge-key"] = pm[1]
        props[name] = s
        setter = inspect.getsource(getattr(cls, attr).fset)
        if "must not be `None`" in setter:
            required.append(name)
    d = {"type": "object", "properties": props}
    if required:
        d["required"] = required
    return d


def main():
    for model, group, version, kind, desc in KINDS:
        ref(model)
        lst = model + "List"
        if hasattr(models, lst):
            ref(lst)
    while queue:
        model = queue.pop(0)
        defs[model] = build(model)
    for model, group, version, kind, desc in KINDS:
        defs[model]["description"] = desc
        gvk = [{"group": group, "kind": kind, "version": version}]
        defs[model]["x-kubernetes-group-version-kind"] = gvk
        lst = model + "List"
        if lst in defs:
            defs[lst]["description"] = "%sList is a list of %s." % (
                kind, kind)
            defs[lst]["x-kubernetes-group-version-kind"] = [
                {"group": group, "kind": kind + "List",
                 "version": version}]
    out = {"generatedFrom": "python3-kubernetes " + kubernetes.__version__,
           "definitions": {def_name(k): v for k, v in defs.items()}}
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


main()
