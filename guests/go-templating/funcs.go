package main

// The template engine: Go's text/template named "manifests", with
// upstream's functions and Sprig's (without env and expandenv, which could
// leak the function's environment).

import (
	cryptorand "crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"text/template"
	"time"

	sprig "github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"

	common "github.com/plait-dev/plait/guests/go-templating/internal/xpcommon"
)

// maxIncludeDepth is how deep include may nest the same template.
const maxIncludeDepth = 1000

const extraResourcesContextKey = "apiextensions.crossplane.io/extra-resources"

// newTemplate returns an empty template with the functions and, when both
// are given, the delimiters.
func newTemplate(d *delims) *template.Template {
	t := template.New("manifests")
	if d != nil && d.Left != nil && d.Right != nil {
		t = t.Delims(*d.Left, *d.Right)
	}
	t.Funcs(template.FuncMap{
		"randomChoice":                 randomChoice,
		"toYaml":                       toYaml,
		"fromYaml":                     fromYaml,
		"getResourceCondition":         getResourceCondition,
		"setResourceNameAnnotation":    setResourceNameAnnotation,
		"getComposedResource":          getComposedResource,
		"getCompositeResource":         getCompositeResource,
		"getExtraResources":            getExtraResources,
		"getExtraResourcesFromContext": getExtraResourcesFromContext,
		"getCredentialData":            getCredentialData,
	})
	t.Funcs(template.FuncMap{"include": includeFunc(t)})
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	// Sprig's randInt and shuffle draw from math/rand's global generator,
	// which starts in the same state in every call of a component started
	// from a snapshot; these draw from one seeded by the call's own
	// randomness, so they differ from call to call as upstream's do.
	random := callRandom()
	funcs["randInt"] = func(min, max int) int { return random.Intn(max-min) + min }
	funcs["shuffle"] = func(s string) string {
		runes := []rune(s)
		random.Shuffle(len(runes), func(i, j int) { runes[i], runes[j] = runes[j], runes[i] })
		return string(runes)
	}
	t.Funcs(funcs)
	return t
}

// applyOptions sets template options; an unknown one makes text/template
// panic, which becomes an error.
func applyOptions(t *template.Template, options []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic occurred while applying template options: %v", r)
		}
	}()
	t.Option(options...)
	return nil
}

// callRandom is a generator seeded from crypto/rand, which reads the
// host's randomness on every call.
func callRandom() *rand.Rand {
	var seed [8]byte
	_, _ = cryptorand.Read(seed[:])                                             // never fails: Go 1.24 crashes rather than return an error
	return rand.New(rand.NewSource(int64(binary.LittleEndian.Uint64(seed[:])))) //nolint:gosec // not for secrets
}

func randomChoice(choices ...string) string {
	r := rand.New(rand.NewSource(time.Now().UnixNano())) //nolint:gosec // not for secrets
	return choices[r.Intn(len(choices))]
}

func toYaml(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func fromYaml(text string) (any, error) {
	var out any
	err := yaml.Unmarshal([]byte(text), &out)
	return out, err
}

// getResourceCondition finds condition ct in res's status, where res is
// an observed resource entry ({resource: {status: ...}}) or an object
// itself; a missing condition is one of type ct with status Unknown.
func getResourceCondition(ct string, res map[string]any) common.Condition {
	var status common.ConditionedStatus
	if err := getValueInto(res, "resource.status", &status); err != nil {
		if err := getValueInto(res, "status", &status); err != nil {
			status = common.ConditionedStatus{}
		}
	}
	return status.GetCondition(common.ConditionType(ct))
}

func setResourceNameAnnotation(name string) string {
	return annotationResourceName + ": " + name
}

// includeFunc renders a named template to a string. A template including
// itself more than maxIncludeDepth deep is an error, not a stack overflow.
func includeFunc(t *template.Template) func(string, any) (string, error) {
	depth := map[string]int{}
	return func(name string, data any) (string, error) {
		if n, seen := depth[name]; seen {
			if n > maxIncludeDepth {
				return "", fmt.Errorf("rendering template has a nested reference name: %s: unable to execute template", name)
			}
			depth[name]++
		} else {
			depth[name] = 1
		}
		var b strings.Builder
		err := t.ExecuteTemplate(&b, name, data)
		depth[name]--
		return b.String(), err
	}
}

func getComposedResource(req map[string]any, name string) map[string]any {
	var out map[string]any
	if err := getValueInto(req, "observed.resources["+name+"]resource", &out); err != nil {
		return nil
	}
	return out
}

func getCompositeResource(req map[string]any) map[string]any {
	var out map[string]any
	if err := getValueInto(req, "observed.composite.resource", &out); err != nil {
		return nil
	}
	return out
}

func getExtraResources(req map[string]any, name string) []any {
	var out []any
	if err := getValueInto(req, "requiredResources["+name+"].items", &out); err != nil {
		if err := getValueInto(req, "extraResources["+name+"].items", &out); err != nil {
			return nil
		}
	}
	return out
}

func getExtraResourcesFromContext(req map[string]any, name string) []any {
	var out []any
	if err := getValueInto(req, "context["+extraResourcesContextKey+"]["+name+"].items", &out); err != nil {
		return nil
	}
	return out
}

// requestFields are the members a RunFunctionRequest's JSON may have.
var requestFields = map[string]bool{
	"meta": true, "observed": true, "desired": true, "input": true, "context": true,
	"extraResources": true, "extra_resources": true, "credentials": true,
	"requiredResources": true, "required_resources": true,
	"requiredSchemas": true, "required_schemas": true,
}

// getCredentialData returns the data of credentials credName. Upstream
// reads req back as a RunFunctionRequest, so anything that is not one (or
// any credentials entry that does not decode) gives nil.
func getCredentialData(req map[string]any, credName string) map[string][]byte {
	if _, err := json.Marshal(req); err != nil {
		return nil
	}
	for k := range req {
		if !requestFields[k] {
			return nil
		}
	}
	creds := req["credentials"]
	all, ok := creds.(map[string]any)
	if creds != nil && !ok {
		return nil
	}
	var found map[string][]byte
	for name, entry := range all {
		data, ok := credentialData(entry)
		if !ok {
			return nil
		}
		if name == credName {
			found = data
		}
	}
	return found
}

// credentialData decodes one credentials entry.
func credentialData(entry any) (map[string][]byte, bool) {
	if entry == nil {
		return nil, true
	}
	obj, ok := entry.(map[string]any)
	if !ok {
		return nil, false
	}
	var cd any
	for k, v := range obj {
		if k != "credentialData" && k != "credential_data" {
			return nil, false
		}
		cd = v
	}
	if cd == nil {
		return nil, true
	}
	cdObj, ok := cd.(map[string]any)
	if !ok {
		return nil, false
	}
	for k := range cdObj {
		if k != "data" {
			return nil, false
		}
	}
	if cdObj["data"] == nil {
		return nil, true
	}
	data, ok := cdObj["data"].(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		b, err := decodeProtoBytes(s)
		if err != nil {
			return nil, false
		}
		out[k] = b
	}
	return out, true
}

// decodeProtoBytes reads bytes as protojson does: standard or URL base64,
// padded or not.
func decodeProtoBytes(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.DecodeString(s)
}
