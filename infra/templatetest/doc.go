// Package templatetest checks the SAM application (template.yaml at the root of the
// module) without an AWS account: the template is parsed twice, once with goformation,
// whose intrinsic processor resolves !Ref, !Sub, !If, !Select and !Split against
// parameter values chosen by each test, and once as plain YAML for what goformation
// drops (FunctionUrlConfig.Cors, Globals, Rules, newer properties such as
// InvokedViaFunctionUrl). Where Python's aws-sam-translator is installed (cfn-lint
// brings it), the template is also transformed by SAM's own translator
// (testdata/sam_transform.py) and the CloudFormation SAM would deploy is checked: no
// Resource "*", no managed policy, only the explicit roles (TILESIEVE_REQUIRE_SAM=1
// makes a missing translator a failure). The distribution's viewer-request function
// is checked against its source, infra/cdn/viewer-request.js, whose own test runs
// under Node (TILESIEVE_REQUIRE_NODE=1 makes a missing node a failure). It also
// checks the function-URL fixtures in events/ that
// `sam local invoke TilesFunction -e events/url-*.json` feeds to the tile function,
// and that samconfig.toml carries no parameter list.
//
// The package has no code of its own; run it with `go test -race ./infra/templatetest/`.
package templatetest
