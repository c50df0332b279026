// Package templatetest checks the SAM application (template.yaml at the root of the
// module) without an AWS account: the template is parsed twice, once with goformation,
// whose intrinsic processor resolves !Ref, !Sub, !If, !Select and !Split against
// parameter values chosen by each test, and once as plain YAML for what goformation
// drops (FunctionUrlConfig.Cors, Globals, Rules, newer properties such as
// InvokedViaFunctionUrl). It also checks the function-URL fixtures in events/ that
// `sam local invoke TilesFunction -e events/url-*.json` feeds to the tile function.
//
// The package has no code of its own; run it with `go test -race ./infra/templatetest/`.
package templatetest
