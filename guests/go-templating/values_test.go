package main

import (
	"reflect"
	"testing"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

func TestTemplateNumber(t *testing.T) {
	cases := map[string]struct {
		text string
		want any
	}{
		"WholeNumberIsInt64":            {text: "1000000", want: int64(1000000)},
		"WholeDoubleIsInt64":            {text: "2.0", want: int64(2)},
		"ExponentWholeIsInt64":          {text: "1e3", want: int64(1000)},
		"FractionIsFloat64":             {text: "1.5", want: 1.5},
		"NegativeIsInt64":               {text: "-42", want: int64(-42)},
		"NegativeZeroIsInt64Zero":       {text: "-0", want: int64(0)},
		"BeyondDoublePrecisionRounds":   {text: "9007199254740993", want: int64(9007199254740992)},
		"AboveInt64IsFloat64":           {text: "100000000000000000000", want: 1e20},
		"FromOneE21PrintsAsExponent":    {text: "1e21", want: 1e21},
		"TinyIsFloat64":                 {text: "1e-7", want: 1e-7},
		"MaxInt64RoundsOutOfRangeFloat": {text: "9223372036854775807", want: 9223372036854775807.0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := templateNumber(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestFormatDoubleMatchesProtojson(t *testing.T) {
	cases := map[float64]string{
		3:       "3",
		1.5:     "1.5",
		1e20:    "100000000000000000000",
		1e21:    "1e+21",
		1e-7:    "1e-7",
		0.00001: "0.00001",
		-2.5e-9: "-2.5e-9",
	}
	for f, want := range cases {
		if got := formatDouble(f); got != want {
			t.Errorf("formatDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestEncodeJSONPrintsWholeNumbersAsIntegers(t *testing.T) {
	got, err := encodeJSON(map[string]any{"i": int64(3), "f": 3.0, "h": 1.5, "big": int64(9007199254740993), "l": []any{int64(1), "<&>"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"big":9007199254740992,"f":3,"h":1.5,"i":3,"l":[1,"<&>"]}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A template sees numbers as upstream's does: whole numbers are int64.
func TestTemplatesSeeInt64(t *testing.T) {
	xr := `{"apiVersion":"example.org/v1","kind":"XR","metadata":{"name":"x"},"spec":{"count":1000000,"half":1.5,"big":1e21,"f":2.0}}`
	s := ".observed.composite.resource.spec"
	tmpl := configMap(
		`countKind: {{ `+s+`.count | kindOf }}`,
		`count: "{{ `+s+`.count }}"`,
		`halfKind: {{ `+s+`.half | kindOf }}`,
		`bigKind: {{ `+s+`.big | kindOf }}`,
		`big: "{{ `+s+`.big }}"`,
		`fKind: {{ `+s+`.f | kindOf }}`,
		`composedKind: {{ (getCompositeResource .).spec.count | kindOf }}`,
		`times3: "{{ mul `+s+`.count 3 }}"`,
	)
	req := &component.Request{Input: inline(tmpl, nil), Observed: component.State{Composite: resource(xr)}}
	got := dataOf(t, renderOne(t, req))
	want := map[string]any{
		"countKind": "int64", "count": "1000000", "halfKind": "float64", "bigKind": "float64", "big": "1e+21",
		"fKind": "int64", "composedKind": "int64", "times3": "3000000",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// Objects go back to the host with whole numbers as integers.
func TestOutputNumbersAreIntegers(t *testing.T) {
	tmpl := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    gotemplating.fn.crossplane.io/composition-resource-name: p\nspec:\n  replicas: 3\n  ratio: 0.5\n  float: 3.0\n  copied: {{ .observed.composite.resource.spec.count }}\n"
	rsp := run(t, withXR(inline(tmpl, nil)))
	if len(rsp.Desired.Resources) != 1 {
		t.Fatalf("got %s", show(rsp.Desired.Resources))
	}
	want := `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"name":"p"},"spec":{"copied":2,"float":3,"ratio":0.5,"replicas":3}}`
	if got := rsp.Desired.Resources[0].Resource.JSON; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
