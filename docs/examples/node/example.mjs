// A completion and a streamed chat completion through a Narwhal router, with the official OpenAI Node client.
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

try {
  await client.completions.create({ model: "gpt-4", prompt: "x", max_tokens: 1 });
} catch (err) {
  console.log(`error: ${err.status} ${err.error?.type} ${err.error?.code}: ${err.error?.message}`);
}
