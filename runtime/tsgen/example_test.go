package tsgen_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/subako/subako/runtime/tsgen"
)

func ExampleType() {
	var s jsonschema.Schema
	json.Unmarshal([]byte(`{"type":"object","required":["state"],"properties":{
		"state":{"enum":["pending","approved","denied"]},
		"limit":{"type":"integer","description":"1 to 500"}}}`), &s)
	fmt.Println(tsgen.Type(&s))
	// Output:
	// {
	//   /** 1 to 500 */
	//   limit?: number;
	//   state: "pending" | "approved" | "denied";
	// }
}

func ExampleClient() {
	var in jsonschema.Schema
	json.Unmarshal([]byte(`{"type":"object","required":["command"],"properties":{"command":{"type":"string"}}}`), &in)
	out := tsgen.Client([]tsgen.Func{{Path: []string{"sandbox", "workbench", "exec"}, Doc: "Runs a command.", Input: &in, OutputType: "string"}})
	// After the SubakoError class every file starts with:
	fmt.Print(out[strings.Index(out, "declare const $"):])
	// Output:
	// declare const $: {
	//   sandbox: {
	//     workbench: {
	//       /** Runs a command. */
	//       exec(input: {
	//         command: string;
	//       }): Promise<string>;
	//     };
	//   };
	// };
}
