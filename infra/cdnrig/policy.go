package cdnrig

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tilesieve/tilesieve/infra/internal/yamlnode"
)

// Managed CloudFront policies the rig knows the meaning of.
const (
	ManagedCachingDisabled           = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
	ManagedAllViewer                 = "216adef6-5c7f-47e4-b989-5492eafa07d3"
	ManagedAllViewerExceptHostHeader = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
)

// Policy is the CloudFront behaviour the rig mirrors: what the default cache
// behaviour's cache policy puts in the key and how long it keeps answers,
// what its origin request policy forwards, the headers the origin gets from
// the distribution, and the behaviours that are not cached at all.
type Policy struct {
	// MinTTL, DefaultTTL and MaxTTL are the cache policy's: an answer's
	// s-maxage or max-age is clamped to [MinTTL, MaxTTL]; one without
	// either (or Expires) is kept DefaultTTL.
	MinTTL, DefaultTTL, MaxTTL time.Duration
	// KeyHeaders are the viewer headers in the cache key (besides the
	// path); the host is not in it, as in CloudFront.
	KeyHeaders []string
	// AcceptEncoding lists the encodings the key distinguishes ("br",
	// "gzip"): CloudFront normalises the viewer's Accept-Encoding to them.
	AcceptEncoding []string
	// ForwardHost is whether the origin sees the viewer's Host; otherwise
	// it sees its own.
	ForwardHost bool
	// OriginHeaders are the origin's custom headers: set on every origin
	// request, replacing whatever a viewer sent under those names.
	OriginHeaders []Header
	// OriginSigning is the SigningBehavior of the origin's access control
	// ("always", "no-override", "never"; "" without one): CloudFront's
	// SigV4 Authorization replaces the viewer's ("always") or is added when
	// the viewer sent none ("no-override"). The rig writes a signature-shaped
	// value the origin cannot mistake for a viewer's token.
	OriginSigning string
	// ViewerHostAsForwardedHost is the effect of the default behaviour's
	// viewer-request function: X-Forwarded-Host is set to the viewer's
	// Host, overwriting any the viewer sent. ViewerFunction names the
	// function resource ("" when there is none).
	ViewerHostAsForwardedHost bool
	ViewerFunction            string
	// AllowedMethods and CachedMethods are the default behaviour's.
	AllowedMethods, CachedMethods []string
	// Uncached are the behaviours whose cache policy is CachingDisabled;
	// requests matching them always go to the origin.
	Uncached []Uncached
}

// Uncached is a cache behaviour with caching disabled.
type Uncached struct {
	PathPattern string
	// ViewerHostAsForwardedHost: the behaviour has the viewer-request
	// function too.
	ViewerHostAsForwardedHost bool
}

// Header is one header name and value.
type Header struct{ Name, Value string }

// TemplateValues resolve what a template leaves to deploy time.
type TemplateValues struct {
	// Params are parameter values for !Ref; a parameter not given takes
	// its default.
	Params map[string]string
	// Conditions are the values of the conditions !If asks.
	Conditions map[string]bool
}

// PolicyFromTemplate reads the Policy of the template's CloudFront
// distribution (its only AWS::CloudFront::Distribution). Whatever the rig
// cannot mirror (query strings or cookies in the key, an origin request
// policy that picks headers, a second cached behaviour) is an error, so a
// template that changes under the rig fails its tests instead of passing
// them with other settings.
func PolicyFromTemplate(src []byte, v TemplateValues) (Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return Policy{}, fmt.Errorf("cdnrig: template: %w", err)
	}
	if len(doc.Content) != 1 {
		return Policy{}, errors.New("cdnrig: template: not one YAML document")
	}
	tpl := &template{root: doc.Content[0], v: v}
	p, err := tpl.policy()
	if err != nil {
		return Policy{}, fmt.Errorf("cdnrig: template: %w", err)
	}
	return p, nil
}

type template struct {
	root *yaml.Node
	v    TemplateValues
}

func (t *template) policy() (Policy, error) {
	var p Policy
	dists := t.resourcesOfType("AWS::CloudFront::Distribution")
	if len(dists) != 1 {
		return p, fmt.Errorf("want one AWS::CloudFront::Distribution, found %d", len(dists))
	}
	dc, err := t.path(dists[0], "Properties", "DistributionConfig")
	if err != nil {
		return p, err
	}
	def, err := t.path(dc, "DefaultCacheBehavior")
	if err != nil {
		return p, err
	}
	if err := t.cachePolicy(def, &p); err != nil {
		return p, err
	}
	if err := t.originRequestPolicy(def, &p); err != nil {
		return p, err
	}
	if p.AllowedMethods, err = t.strings(def, "AllowedMethods"); err != nil {
		return p, err
	}
	if p.CachedMethods, err = t.strings(def, "CachedMethods"); err != nil {
		return p, err
	}
	if p.ViewerFunction, err = t.viewerFunction(def); err != nil {
		return p, err
	}
	p.ViewerHostAsForwardedHost = p.ViewerFunction != ""
	if err := t.originHeaders(dc, def, &p); err != nil {
		return p, err
	}
	behaviours, err := t.optional(dc, "CacheBehaviors")
	if err != nil {
		return p, err
	}
	if behaviours != nil {
		for _, b := range behaviours.Content {
			b, err := t.resolve(b)
			if err != nil {
				return p, err
			}
			pattern, err := t.scalar(b, "PathPattern")
			if err != nil {
				return p, err
			}
			id, err := t.scalar(b, "CachePolicyId")
			if err != nil {
				return p, err
			}
			if id != ManagedCachingDisabled {
				return p, fmt.Errorf("cache behaviour %s: the rig mirrors only CachingDisabled besides the default behaviour, got cache policy %s", pattern, id)
			}
			fn, err := t.viewerFunction(b)
			if err != nil {
				return p, fmt.Errorf("cache behaviour %s: %w", pattern, err)
			}
			p.Uncached = append(p.Uncached, Uncached{PathPattern: pattern, ViewerHostAsForwardedHost: fn != ""})
		}
	}
	return p, nil
}

// cachePolicy reads the default behaviour's cache policy (a resource of the
// template).
func (t *template) cachePolicy(def *yaml.Node, p *Policy) error {
	ref, err := t.refOf(def, "CachePolicyId")
	if err != nil {
		return fmt.Errorf("default cache behaviour: %w (the rig mirrors a cache policy of the template)", err)
	}
	cfg, err := t.path(t.resource(ref), "Properties", "CachePolicyConfig")
	if err != nil {
		return fmt.Errorf("cache policy %s: %w", ref, err)
	}
	for _, ttl := range []struct {
		name string
		d    *time.Duration
	}{{"MinTTL", &p.MinTTL}, {"DefaultTTL", &p.DefaultTTL}, {"MaxTTL", &p.MaxTTL}} {
		s, err := t.scalar(cfg, ttl.name)
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("cache policy %s: %s %q is not a number of seconds", ref, ttl.name, s)
		}
		*ttl.d = time.Duration(n) * time.Second
	}
	params, err := t.path(cfg, "ParametersInCacheKeyAndForwardedToOrigin")
	if err != nil {
		return err
	}
	for _, enc := range []struct{ key, name string }{{"EnableAcceptEncodingBrotli", "br"}, {"EnableAcceptEncodingGzip", "gzip"}} {
		s, err := t.scalar(params, enc.key)
		if err != nil {
			return err
		}
		if s == "true" {
			p.AcceptEncoding = append(p.AcceptEncoding, enc.name)
		}
	}
	for _, none := range []struct{ config, behaviour string }{{"CookiesConfig", "CookieBehavior"}, {"QueryStringsConfig", "QueryStringBehavior"}} {
		n, err := t.path(params, none.config, none.behaviour)
		if err != nil {
			return err
		}
		if n.Value != "none" {
			return fmt.Errorf("cache policy %s: %s %s: the rig mirrors only none", ref, none.behaviour, n.Value)
		}
	}
	hb, err := t.path(params, "HeadersConfig", "HeaderBehavior")
	if err != nil {
		return err
	}
	switch hb.Value {
	case "none":
	case "whitelist":
		hc, _ := t.path(params, "HeadersConfig")
		if p.KeyHeaders, err = t.strings(hc, "Headers"); err != nil {
			return err
		}
	default:
		return fmt.Errorf("cache policy %s: HeaderBehavior %s: the rig mirrors none and whitelist", ref, hb.Value)
	}
	return nil
}

// originRequestPolicy reads what the default behaviour forwards: a managed
// policy that forwards every viewer header, or one of the template's that
// does.
func (t *template) originRequestPolicy(def *yaml.Node, p *Policy) error {
	id, err := t.scalar(def, "OriginRequestPolicyId")
	if err == nil {
		switch id {
		case ManagedAllViewer:
			p.ForwardHost = true
			return nil
		case ManagedAllViewerExceptHostHeader:
			return nil
		}
		return fmt.Errorf("origin request policy %s: the rig mirrors AllViewer and AllViewerExceptHostHeader", id)
	}
	ref, rerr := t.refOf(def, "OriginRequestPolicyId")
	if rerr != nil {
		return fmt.Errorf("default cache behaviour: %w", errors.Join(err, rerr))
	}
	hb, err := t.path(t.resource(ref), "Properties", "OriginRequestPolicyConfig", "HeadersConfig", "HeaderBehavior")
	if err != nil {
		return fmt.Errorf("origin request policy %s: %w", ref, err)
	}
	switch hb.Value {
	case "allViewer", "allViewerAndWhitelistCloudFront":
		p.ForwardHost = true
	case "allExcept":
		hc, _ := t.path(t.resource(ref), "Properties", "OriginRequestPolicyConfig", "HeadersConfig")
		except, err := t.strings(hc, "Headers")
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(except, func(h string) bool { return strings.EqualFold(h, "Host") }) || len(except) != 1 {
			return fmt.Errorf("origin request policy %s: allExcept %v: the rig mirrors allExcept [Host] only", ref, except)
		}
	default:
		return fmt.Errorf("origin request policy %s: HeaderBehavior %s: the rig mirrors policies that forward every viewer header", ref, hb.Value)
	}
	return nil
}

// viewerFunction names the CloudFront Function associated with the
// behaviour's viewer requests, "" when there is none.
func (t *template) viewerFunction(def *yaml.Node) (string, error) {
	assoc, err := t.optional(def, "FunctionAssociations")
	if err != nil || assoc == nil {
		return "", err
	}
	for _, a := range assoc.Content {
		a, err := t.resolve(a)
		if err != nil {
			return "", err
		}
		ev, err := t.scalar(a, "EventType")
		if err != nil {
			return "", err
		}
		if ev != "viewer-request" {
			continue
		}
		arn, err := t.optional(a, "FunctionARN")
		if err != nil || arn == nil {
			return "", fmt.Errorf("viewer-request function without FunctionARN: %w", err)
		}
		if arn.Tag == "!GetAtt" {
			name, _, _ := strings.Cut(arn.Value, ".")
			if arn.Kind == yaml.SequenceNode && len(arn.Content) > 0 {
				name = arn.Content[0].Value
			}
			return name, nil
		}
		return arn.Value, nil
	}
	return "", nil
}

// originHeaders reads the custom headers of the default behaviour's origin.
func (t *template) originHeaders(dc, def *yaml.Node, p *Policy) error {
	target, err := t.scalar(def, "TargetOriginId")
	if err != nil {
		return err
	}
	origins, err := t.path(dc, "Origins")
	if err != nil {
		return err
	}
	for _, o := range origins.Content {
		o, err := t.resolve(o)
		if err != nil {
			return err
		}
		if id, err := t.scalar(o, "Id"); err != nil || id != target {
			continue
		}
		if err := t.originSigning(o, p); err != nil {
			return err
		}
		hs, err := t.optional(o, "OriginCustomHeaders")
		if err != nil || hs == nil {
			return err
		}
		for _, h := range hs.Content {
			h, err := t.resolve(h)
			if err != nil {
				return err
			}
			name, err := t.scalar(h, "HeaderName")
			if err != nil {
				return err
			}
			value, err := t.scalar(h, "HeaderValue")
			if err != nil {
				return fmt.Errorf("origin header %s: %w", name, err)
			}
			p.OriginHeaders = append(p.OriginHeaders, Header{Name: name, Value: value})
		}
		return nil
	}
	return fmt.Errorf("no origin %q", target)
}

// originSigning reads the SigningBehavior of the origin's access control, a
// resource of the template.
func (t *template) originSigning(o *yaml.Node, p *Policy) error {
	oac, err := t.optional(o, "OriginAccessControlId")
	if err != nil || oac == nil {
		return err
	}
	if oac.Tag != "!GetAtt" {
		return fmt.Errorf("OriginAccessControlId is not a !GetAtt of the template's access control")
	}
	name, _, _ := strings.Cut(oac.Value, ".")
	if oac.Kind == yaml.SequenceNode && len(oac.Content) > 0 {
		name = oac.Content[0].Value
	}
	b, err := t.path(t.resource(name), "Properties", "OriginAccessControlConfig", "SigningBehavior")
	if err != nil {
		return fmt.Errorf("origin access control %s: %w", name, err)
	}
	switch b.Value {
	case "always", "no-override", "never":
		p.OriginSigning = b.Value
		return nil
	}
	return fmt.Errorf("origin access control %s: SigningBehavior %q", name, b.Value)
}

// resourcesOfType returns the resources of a type, in template order.
func (t *template) resourcesOfType(typ string) []*yaml.Node {
	res := yamlnode.Value(t.root, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for i := 1; i < len(res.Content); i += 2 {
		if r := res.Content[i]; yamlnode.Value(r, "Type") != nil && yamlnode.Value(r, "Type").Value == typ {
			out = append(out, r)
		}
	}
	return out
}

func (t *template) resource(name string) *yaml.Node {
	return yamlnode.Value(yamlnode.Value(t.root, "Resources"), name)
}

// refOf returns the logical id a key's !Ref names.
func (t *template) refOf(n *yaml.Node, key string) (string, error) {
	v := yamlnode.Value(n, key)
	if v == nil {
		return "", fmt.Errorf("no %s", key)
	}
	v, err := t.resolveIf(v)
	if err != nil {
		return "", err
	}
	if v.Tag != "!Ref" || t.resource(v.Value) == nil {
		return "", fmt.Errorf("%s is not a !Ref to a resource", key)
	}
	return v.Value, nil
}

// path walks mapping keys, resolving !If on the way.
func (t *template) path(n *yaml.Node, keys ...string) (*yaml.Node, error) {
	for i, k := range keys {
		next := yamlnode.Value(n, k)
		if next == nil {
			return nil, fmt.Errorf("no %s", strings.Join(keys[:i+1], "."))
		}
		var err error
		if n, err = t.resolve(next); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(keys[:i+1], "."), err)
		}
	}
	return n, nil
}

// optional is path of one key, nil without error when the key is absent.
func (t *template) optional(n *yaml.Node, key string) (*yaml.Node, error) {
	if yamlnode.Value(n, key) == nil {
		return nil, nil
	}
	v, err := t.path(n, key)
	if err != nil || v.Tag == "!Ref" && v.Value == "AWS::NoValue" {
		return nil, err
	}
	return v, nil
}

// scalar reads a key as a string, evaluating the intrinsics eval knows.
func (t *template) scalar(n *yaml.Node, key string) (string, error) {
	v := yamlnode.Value(n, key)
	if v == nil {
		return "", fmt.Errorf("no %s", key)
	}
	str, err := t.evalString(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return str, nil
}

// eval evaluates a value to a string or a list of strings: plain scalars,
// !If, !Ref of parameters and pseudo parameters, !Select, !Split, !Join and
// !Sub. Anything else (a resource's !Ref or !GetAtt, which exist only once
// deployed) is an error.
func (t *template) eval(n *yaml.Node) (any, error) {
	n, err := t.resolveIf(n)
	if err != nil {
		return nil, err
	}
	args := func(want int) ([]*yaml.Node, error) {
		if n.Kind != yaml.SequenceNode || len(n.Content) != want {
			return nil, fmt.Errorf("line %d: %s wants %d arguments", n.Line, n.Tag, want)
		}
		return n.Content, nil
	}
	switch n.Tag {
	case "", "!!str", "!!int", "!!bool", "!!float", "!!seq":
		switch n.Kind {
		case yaml.ScalarNode:
			return n.Value, nil
		case yaml.SequenceNode:
			out := make([]string, 0, len(n.Content))
			for _, e := range n.Content {
				str, err := t.evalString(e)
				if err != nil {
					return nil, err
				}
				out = append(out, str)
			}
			return out, nil
		}
		return nil, fmt.Errorf("line %d: not a value", n.Line)
	case "!Ref":
		return t.ref(n.Value)
	case "!Select":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		idx, err := t.eval(a[0])
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(fmt.Sprint(idx))
		if err != nil {
			return nil, fmt.Errorf("line %d: !Select index %v", n.Line, idx)
		}
		list, err := t.evalList(a[1])
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= len(list) {
			return nil, fmt.Errorf("line %d: !Select %d of %d", n.Line, i, len(list))
		}
		return list[i], nil
	case "!Split":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		str, err := t.evalString(a[1])
		if err != nil {
			return nil, err
		}
		return strings.Split(str, a[0].Value), nil
	case "!Join":
		a, err := args(2)
		if err != nil {
			return nil, err
		}
		list, err := t.evalList(a[1])
		if err != nil {
			return nil, err
		}
		return strings.Join(list, a[0].Value), nil
	case "!Sub":
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: the rig evaluates !Sub of a string only", n.Line)
		}
		var subErr error
		out := subVar.ReplaceAllStringFunc(n.Value, func(m string) string {
			v, err := t.ref(m[2 : len(m)-1])
			if err != nil {
				subErr = err
				return ""
			}
			return v
		})
		return out, subErr
	}
	return nil, fmt.Errorf("line %d: %s is known only once deployed", n.Line, n.Tag)
}

var subVar = regexp.MustCompile(`\$\{[A-Za-z0-9:]+\}`)

// evalString evaluates n to a string; a list is an error.
func (t *template) evalString(n *yaml.Node) (string, error) {
	v, err := t.eval(n)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("line %d: a list, not a value", n.Line)
	}
	return str, nil
}

func (t *template) evalList(n *yaml.Node) ([]string, error) {
	v, err := t.eval(n)
	if err != nil {
		return nil, err
	}
	if l, ok := v.([]string); ok {
		return l, nil
	}
	return strings.Split(v.(string), ","), nil // a CommaDelimitedList parameter
}

// ref is the value of a parameter or pseudo parameter: TemplateValues.Params,
// else the parameter's default.
func (t *template) ref(name string) (string, error) {
	if v, ok := t.v.Params[name]; ok {
		return v, nil
	}
	if strings.HasPrefix(name, "AWS::") {
		return "", fmt.Errorf("pseudo parameter %s has no value (TemplateValues.Params)", name)
	}
	param := yamlnode.Value(yamlnode.Value(t.root, "Parameters"), name)
	if param == nil {
		return "", fmt.Errorf("!Ref %s: a resource, known only once deployed", name)
	}
	def := yamlnode.Value(param, "Default")
	if def == nil {
		return "", fmt.Errorf("parameter %s has no default and no value was given", name)
	}
	return def.Value, nil
}

// strings reads a key as a list of strings.
func (t *template) strings(n *yaml.Node, key string) ([]string, error) {
	v := yamlnode.Value(n, key)
	if v == nil {
		return nil, fmt.Errorf("no %s", key)
	}
	l, err := t.evalList(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return l, nil
}

// resolve resolves !If; other nodes are returned as they are.
func (t *template) resolve(n *yaml.Node) (*yaml.Node, error) { return t.resolveIf(n) }

func (t *template) resolveIf(n *yaml.Node) (*yaml.Node, error) {
	for n.Tag == "!If" {
		if n.Kind != yaml.SequenceNode || len(n.Content) != 3 {
			return nil, fmt.Errorf("line %d: malformed !If", n.Line)
		}
		cond := n.Content[0].Value
		v, ok := t.v.Conditions[cond]
		if !ok {
			return nil, fmt.Errorf("line %d: condition %s has no value (TemplateValues.Conditions)", n.Line, cond)
		}
		if v {
			n = n.Content[1]
		} else {
			n = n.Content[2]
		}
	}
	return n, nil
}
