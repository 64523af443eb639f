module github.com/plait-dev/plait/guests/go-templating

go 1.24.9

require (
	dario.cat/mergo v1.0.2
	github.com/Masterminds/sprig/v3 v3.3.0
	github.com/plait-dev/plait/guests/sdk-go v0.0.0
	gopkg.in/yaml.v3 v3.0.1
	k8s.io/apimachinery v0.34.10
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730
)

require (
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.4.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/spf13/cast v1.7.0 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/crypto v0.45.0 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)

replace github.com/plait-dev/plait/guests/sdk-go => ../sdk-go
