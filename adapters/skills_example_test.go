package adapters_test

import (
	"encoding/json"
	"fmt"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/skills"
)

// A loaded skill (from skills.Load) offered to Claude as a user
// message of the conversation.
func ExampleSkillMessage() {
	ls := &skills.Loaded{
		Skill:        &skills.Skill{Server: "docs", Name: "pdf-processing"},
		Instructions: "---\nname: pdf-processing\n---\nUse pdftk.\n",
	}
	msg, err := adapters.SkillMessage(adapters.Anthropic, ls)
	if err != nil {
		panic(err)
	}
	out, _ := json.Marshal(msg)
	fmt.Println(string(out))
	// Output:
	// {"content":"Skill pdf-processing (from server docs). Its instructions follow; follow them where they apply to the task.\n\n---\nname: pdf-processing\n---\nUse pdftk.\n","role":"user"}
}
