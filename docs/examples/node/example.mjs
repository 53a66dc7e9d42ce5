// Through a Narwhal router, with the official OpenAI Node client: a completion, a streamed chat completion, the models,
// embeddings, a response and its streamed follow-up through previous_response_id.
// npm install && NARWHAL_URL=http://localhost:8000/v1 node example.mjs
import OpenAI from "openai";

// The router checks a key only when server.api_key_env is set; the client insists on one.
const client = new OpenAI({
  baseURL: process.env.NARWHAL_URL ?? "http://localhost:8000/v1",
  apiKey: process.env.NARWHAL_API_KEY ?? "none",
});

const completion = await client.completions.create({
  model: "Qwen/Qwen3-0.6B", prompt: "The narwhal is", max_tokens: 8,
});
console.log("completion:", completion.choices[0].text);

const stream = await client.chat.completions.create({
  model: "Qwen/Qwen3-0.6B", messages: [{ role: "user", content: "hello" }], max_completion_tokens: 12, stream: true,
});
process.stdout.write("chat (streamed):");
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
process.stdout.write("\n");

for await (const model of client.models.list()) console.log("model:", model.id);

const embedding = await client.embeddings.create({ model: "Qwen/Qwen3-0.6B", input: "The narwhal is" });
console.log("embedding:", embedding.data[0].embedding.length, "floats");

const response = await client.responses.create({
  model: "Qwen/Qwen3-0.6B", input: "Where do narwhals live?", max_output_tokens: 8,
});
console.log(`response ${response.id}:${response.output_text}`);
const followUp = await client.responses.create({
  model: "Qwen/Qwen3-0.6B", input: "And what do they eat?", previous_response_id: response.id, max_output_tokens: 8,
  stream: true,
});
process.stdout.write("follow-up (streamed):");
for await (const event of followUp) if (event.type === "response.output_text.delta") process.stdout.write(event.delta);
process.stdout.write("\n");

try {
  await client.completions.create({ model: "gpt-4", prompt: "x", max_tokens: 1 });
} catch (err) {
  console.log(`error: ${err.status} ${err.error?.type} ${err.error?.code}: ${err.error?.message}`);
}
