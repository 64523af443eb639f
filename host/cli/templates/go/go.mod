module {{name}}

go 1.24.9

require (
	github.com/crossplane/function-sdk-go v0.5.0
	github.com/plait-dev/plait/guests/sdk-go v0.0.0
)

replace github.com/plait-dev/plait/guests/sdk-go => ./sdk-go
