package openai

// FunctionName is functionName, for the test that a namespaced name
// resolves back (toolcall.InNamespace).
var FunctionName = functionName
