// Command composition-hash prints upstream Crossplane's Composition.Hash() for
// every Composition in the given files, as the expected data of plait's
// composition hash test. It is a test data generator, built against the
// Crossplane API module this go.mod pins.
//
// A .json argument holds an array of Composition objects; a .yaml argument
// holds YAML documents, of which the Compositions are taken. It prints a JSON
// array of {"source", "object", "hash"}, the object as JSON (what the API
// server stores and plait reads).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type expectation struct {
	Source string          `json:"source"`
	Object json.RawMessage `json:"object"`
	Hash   string          `json:"hash"`
}

func objects(path string) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".json") {
		var all []json.RawMessage
		return all, json.Unmarshal(data, &all)
	}
	var all []json.RawMessage
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return nil, err
		}
		object, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(object, &meta) == nil && meta.Kind == "Composition" {
			all = append(all, object)
		}
	}
}

func main() {
	var out []expectation
	for _, path := range os.Args[1:] {
		all, err := objects(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for i, object := range all {
			var c v1.Composition
			if err := json.Unmarshal(object, &c); err != nil {
				fmt.Fprintf(os.Stderr, "%s[%d]: %v\n", path, i, err)
				os.Exit(1)
			}
			out = append(out, expectation{Source: fmt.Sprintf("%s[%d]", path, i), Object: object, Hash: c.Hash()})
		}
	}
	encoded, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(encoded))
}
