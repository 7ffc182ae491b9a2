#!/usr/bin/env python3
"""Validates every manifest in cluster/k8s against Kubernetes' own schemas (PyPI
kubernetes-validate, strict: unknown fields are errors).

Core objects (Secret, Service, ...) are validated whole. The two custom resources, the MPI
Operator's MPIJob (kubeflow.org/v2beta1) and LeaderWorkerSet (leaderworkerset.x-k8s.io/v1),
have no schema in kubernetes-validate and none that a PyPI package ships; what they hold that
Kubernetes runs -- their pod templates -- is validated as core PodTemplates, and the fields
around them are checked by name only (listed in CUSTOM_RESOURCES). Any other kind is an error.
With --weft, every flag a container passes to `weft COMMAND` must be one that `weft COMMAND
--help` lists.

  k8s_manifests_check.py MANIFEST_DIR [--kubernetes-version 1.33.0] [--weft BIN]
"""
import argparse
import pathlib
import shlex
import sys

import kubernetes_validate
import yaml

from weft_flags import unknown_flags

# kind -> (apiVersion, the paths of its pod templates, the spec fields the recipe may use)
CUSTOM_RESOURCES = {
    "MPIJob": ("kubeflow.org/v2beta1",
               lambda spec: [("mpiReplicaSpecs." + name + ".template", r["template"])
                             for name, r in spec["mpiReplicaSpecs"].items()],
               {"slotsPerWorker", "mpiImplementation", "launcherCreationPolicy", "runPolicy",
                "mpiReplicaSpecs", "sshAuthMountPath", "runLauncherAsWorker"}),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",
                        lambda spec: [("leaderWorkerTemplate." + name, spec["leaderWorkerTemplate"][name])
                                      for name in ("leaderTemplate", "workerTemplate")
                                      if name in spec["leaderWorkerTemplate"]],
                        {"replicas", "leaderWorkerTemplate", "startupPolicy", "rolloutStrategy",
                         "networkConfig"}),
}


def validate(doc, version, where):
    """Errors (strings) of one document."""
    kind = doc.get("kind")
    if kind not in CUSTOM_RESOURCES:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            return [f"{where}: {kind}: {e.message} at {'.'.join(map(str, e.path))}"]
        except kubernetes_validate.SchemaNotFoundError:
            return [f"{where}: kind {kind} ({doc.get('apiVersion')}) has no schema to validate it"]
        return []
    api_version, templates, allowed = CUSTOM_RESOURCES[kind]
    errors = []
    if doc.get("apiVersion") != api_version:
        errors.append(f"{where}: {kind} apiVersion is {doc.get('apiVersion')}, expected {api_version}")
    unknown = set(doc.get("spec", {})) - allowed
    if unknown:
        errors.append(f"{where}: {kind} spec has fields this check does not know: {sorted(unknown)}")
    for path, template in templates(doc["spec"]):
        pod_template = {"apiVersion": "v1", "kind": "PodTemplate",
                        "metadata": {"name": doc["metadata"]["name"]}, "template": template}
        for e in validate(pod_template, version, f"{where}: {kind} {path}"):
            errors.append(e)
    return errors


def pod_templates(doc):
    if doc.get("kind") in CUSTOM_RESOURCES:
        return [t for _, t in CUSTOM_RESOURCES[doc["kind"]][1](doc["spec"])]
    return []


def weft_flag_errors(doc, weft, where):
    """Flags given to `weft COMMAND` in the containers of doc that weft COMMAND does not take."""
    errors = []
    for template in pod_templates(doc):
        for c in template["spec"]["containers"]:
            words = shlex.split(" ".join(c.get("command", []) + c.get("args", [])).replace("\\\n", " "))
            errors += [f"{where}: container {c['name']}: {e}" for e in unknown_flags(weft, words)]
    return errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("manifests")
    parser.add_argument("--kubernetes-version", default="1.33.0")
    parser.add_argument("--weft")
    args = parser.parse_args()
    files = sorted(pathlib.Path(args.manifests).glob("*.yaml"))
    if not files:
        sys.exit(f"no *.yaml in {args.manifests}")
    errors, count = [], 0
    for f in files:
        for i, doc in enumerate(yaml.safe_load_all(f.read_text())):
            if doc is None:
                continue
            count += 1
            where = f"{f.name} document {i + 1}"
            found = validate(doc, args.kubernetes_version, where)
            if args.weft:
                found += weft_flag_errors(doc, args.weft, where)
            errors += found
            print(("FAIL " if found else "ok   ") + f"{where}: {doc.get('kind')} {doc['metadata']['name']}")
    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print(f"PASS: {count} objects in {len(files)} files valid against Kubernetes {args.kubernetes_version}")


if __name__ == "__main__":
    main()
