/**
 * Dify's parameter-extractor prompts (graphon `nodes/parameter_extractor/prompts.py`), character
 * for character; `{name}` placeholders are filled by `fill`.
 */

import { fill } from './prompt-fill.js';

export const FUNCTION_NAME = "extract_parameters";

/** System prompt of the function-calling mode. */
export const functionCallingSystemPrompt = (v: { histories: string; instruction: string }): string => fill("You are a helpful assistant tasked with extracting structured information based on specific criteria provided. Follow the guidelines below to ensure consistency and accuracy.\n### Task\nAlways call the `extract_parameters` function with the correct parameters. Ensure that the information extraction is contextual and aligns with the provided criteria.\n### Memory\nHere is the chat history between the human and assistant, provided within <histories> tags:\n<histories>\n\u0000histories\u0000\n</histories>\n### Instructions:\nSome additional information is provided below. Always adhere to these instructions as closely as possible:\n<instruction>\n\u0000instruction\u0000\n</instruction>\nSteps:\n1. Review the chat history provided within the <histories> tags.\n2. Extract the relevant information based on the criteria given, output multiple values if there is multiple relevant information that match the criteria in the given text.\n3. Generate a well-formatted output using the defined functions and arguments.\n4. Use the `extract_parameters` function to create structured outputs with appropriate parameters.\n5. Do not include any XML tags in your output.\n### Example\nTo illustrate, if the task involves extracting a user's name and their request, your function call might look like this: Ensure your output follows a similar structure to examples.\n### Final Output\nProduce well-formatted function calls in json without XML tags, as shown in the example.", v);

/** User message of the function-calling mode: the text and the JSON schema. */
export const functionCallingUserPrompt = (v: { content: string; structure: string }): string => fill("extract structured information from context inside <context></context> XML tags by calling the function extract_parameters with the correct parameters with structure inside <structure></structure> XML tags.\n<context>\n\u0000content\u0000\n</context>\n\n<structure>\n\u0000structure\u0000\n</structure>", v);

/** The worked examples sent before the user's message in the function-calling mode. */
export const FUNCTION_CALLING_EXAMPLES: readonly { readonly query: string; readonly text: string; readonly arguments: Readonly<Record<string, unknown>> }[] = [
  {
    "query": "What is the weather today in SF?",
    "text": "I need always call the function with the correct parameters. In this case, I need to call the function with the location parameter.",
    "arguments": {
      "location": "San Francisco"
    }
  },
  {
    "query": "I want to eat some apple pie.",
    "text": "I need always call the function with the correct parameters. In this case, I need to call the function with the food parameter.",
    "arguments": {
      "food": "apple pie"
    }
  }
];

/** The one prompt of the prompt mode with completion models. */
export const completionJsonPrompt = (v: { histories: string; text: string; instruction: string; structure: string }): string => fill("### Instructions:\nSome extra information are provided below, I should always follow the instructions as possible as I can.\n<instructions>\n\u0000instruction\u0000\n</instructions>\n\n### Extract parameter Workflow\nI need to extract the following information from the input text. The <information to be extracted> tag specifies the 'type', 'description' and 'required' of the information to be extracted.\n<information to be extracted>\n\u0000structure\u0000\n</information to be extracted>\n\nStep 1: Carefully read the input and understand the structure of the expected output.\nStep 2: Extract relevant parameters from the provided text based on the name and description of object.\nStep 3: Structure the extracted parameters to JSON object as specified in <structure>.\nStep 4: Ensure that the JSON object is properly formatted and valid. The output should not contain any XML tags. Only the JSON object should be outputted.\n\n### Memory\nHere are the chat histories between human and assistant, inside <histories></histories> XML tags.\n<histories>\n\u0000histories\u0000\n</histories>\n\n### Structure\nHere is the structure of the expected output, I should always follow the output structure.\n\n  'properties1': 'relevant text extracted from input',\n  'properties2': 'relevant text extracted from input',\n\n\n### Input Text\nInside <text></text> XML tags, there is a text that I should extract parameters and convert to a JSON object.\n<text>\n\u0000text\u0000\n</text>\n\n### Answer\nI should always output a valid JSON object. Output nothing other than the JSON object.\n```JSON", v);

/** System prompt of the prompt mode with chat models. */
export const chatJsonSystemPrompt = (v: { histories: string; instruction: string }): string => fill("You should always follow the instructions and output a valid JSON object.\nThe structure of the JSON object you can found in the instructions.\n\n### Memory\nHere are the chat histories between human and assistant, inside <histories></histories> XML tags.\n<histories>\n\u0000histories\u0000\n</histories>\n\n### Instructions:\nSome extra information are provided below, you should always follow the instructions as possible as I can.\n<instructions>\n\u0000instruction\u0000\n</instructions>", v);

/** User message of the prompt mode with chat models: the JSON schema and the text. */
export const chatJsonUserPrompt = (v: { structure: string; text: string }): string => fill("### Structure\nHere is the structure of the JSON object, you should always follow the structure.\n<structure>\n\u0000structure\u0000\n</structure>\n\n### Text to be converted to JSON\nInside <text></text> XML tags, there is a text that you should convert to a JSON object.\n<text>\n\u0000text\u0000\n</text>", v);

/** The worked examples of the prompt mode with chat models: the schema, the text, the answer. */
export const CHAT_JSON_EXAMPLES: readonly { readonly query: string; readonly schema: Readonly<Record<string, unknown>>; readonly answer: Readonly<Record<string, unknown>> }[] = [
  {
    "query": "What is the weather today in SF?",
    "schema": {
      "type": "object",
      "properties": {
        "location": {
          "type": "string",
          "description": "The location to get the weather information",
          "required": true
        }
      },
      "required": [
        "location"
      ]
    },
    "answer": {
      "location": "San Francisco"
    }
  },
  {
    "query": "I want to eat some apple pie.",
    "schema": {
      "type": "object",
      "properties": {
        "food": {
          "type": "string",
          "description": "The food to eat",
          "required": true
        }
      },
      "required": [
        "food"
      ]
    },
    "answer": {
      "food": "apple pie"
    }
  }
];
