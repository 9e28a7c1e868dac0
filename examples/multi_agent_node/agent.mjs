// A multi-agent travel assistant written in Node.js, run by evalward as a subprocess.
//
// Protocol (evalward's JSON lines): each stdin line is {"id": "...", "request": {query, case_id, turn, ...}};
// we answer each with one stdout line {"id": "...", "output": {response, tool_calls, agents}}.
// Nothing else may be written to stdout; logs go to stderr.
//
// A coordinator routes to sub-agents: weather_agent (get_weather), translator_agent (translate) and
// currency_agent (convert_currency). Every tool call carries the agent that made it, so evalward can
// check per-agent tool expectations.
import readline from "node:readline";

const WEATHER = { beijing: "sunny, 25°C", paris: "light rain, 14°C", tokyo: "cloudy, 19°C" };
const RATES = { "USD->EUR": 0.92, "EUR->USD": 1.09, "USD->JPY": 151.2 };

function weatherAgent(query, calls) {
  const city = Object.keys(WEATHER).find((c) => query.toLowerCase().includes(c));
  if (!city) return "Which city do you mean?";
  const result = WEATHER[city];
  calls.push({ name: "get_weather", args: { city }, agent: "weather_agent", result });
  return `The weather in ${city[0].toUpperCase()}${city.slice(1)} is ${result}.`;
}

function translatorAgent(query, calls) {
  const quoted = query.match(/"([^"]+)"/);
  const target = /japanese/i.test(query) ? "japanese" : "english";
  const text = quoted ? quoted[1] : query;
  const translated = target === "english" && text === "你好世界" ? "Hello world" : `[${target}] ${text}`;
  calls.push({ name: "translate", args: { text, targetLang: target }, agent: "translator_agent", result: translated });
  return `Translation: ${translated}`;
}

function currencyAgent(query, calls) {
  const m = query.match(/(\d+(?:\.\d+)?)\s*(USD|EUR)\s+(?:to|in)\s+(EUR|USD|JPY)/i);
  if (!m) return "Tell me an amount and two currencies, e.g. 100 USD to EUR.";
  const [amount, from, to] = [Number(m[1]), m[2].toUpperCase(), m[3].toUpperCase()];
  const value = Math.round(amount * RATES[`${from}->${to}`] * 100) / 100;
  calls.push({ name: "convert_currency", args: { amount, from, to }, agent: "currency_agent", result: value });
  return `${amount} ${from} is ${value} ${to}.`;
}

function coordinator(query) {
  const calls = [];
  const agents = ["coordinator"];
  const parts = [];
  const lowered = query.toLowerCase();
  if (/weather/.test(lowered)) { agents.push("weather_agent"); parts.push(weatherAgent(query, calls)); }
  if (/translate|翻译/.test(lowered)) { agents.push("translator_agent"); parts.push(translatorAgent(query, calls)); }
  if (/\b(usd|eur|jpy)\b/.test(lowered)) { agents.push("currency_agent"); parts.push(currencyAgent(query, calls)); }
  const response = parts.length ? parts.join(" ") : "I can help with weather, translations and currency conversion.";
  return { response, tool_calls: calls, agents };
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`bad request line: ${err}\n`);
    return;
  }
  const { id, request } = message;
  try {
    process.stdout.write(JSON.stringify({ id, output: coordinator(request.query) }) + "\n");
  } catch (err) {
    process.stdout.write(JSON.stringify({ id, error: String(err) }) + "\n");
  }
});
