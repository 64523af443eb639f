package component

// LogLevel is the level of a line logged through the host.
type LogLevel uint8

const (
	LogTrace LogLevel = iota
	LogDebug
	LogInfo
	LogWarn
	LogError
)
