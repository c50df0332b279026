"""Prints template.yaml as SAM's own translator (aws-sam-translator) turns it
into CloudFormation, as JSON on stdout. Usage: python3 sam_transform.py TEMPLATE

The translator needs no AWS account for this template: the functions run as
explicit roles, so no managed policy is looked up (the loader below answers
none, and a template that asked for one would fail to translate). The local
CodeUri becomes an S3 location, as `sam package` makes it.
"""
import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    def load(self):
        return {}


def main():
    with open(sys.argv[1]) as f:
        template = yaml_parse(f.read())
    # What `sam package` does to local code: an S3 location (cfn-lint does the same).
    template["Globals"]["Function"]["CodeUri"] = "s3://tilesieve-artifacts/tilesieve/code.zip"
    out = transform(template, {}, NoManagedPolicies())
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)


if __name__ == "__main__":
    main()
