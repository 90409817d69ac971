// The official openai npm client (v6) against a mocker-server's audio
// endpoints: audio.transcriptions.create (json and text) and
// audio.translations.create with a WAV file. Prints one JSON object for
// the Go test to check.
// Usage: NODE_PATH=<node_modules> node audio_sdk.cjs BASE_URL CLIP.wav
const fs = require('fs');
const OpenAI = require('openai');

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2] + '/v1', apiKey: 'sk-test', maxRetries: 0 });
  const clip = process.argv[3];
  const transcription = await client.audio.transcriptions.create({
    file: fs.createReadStream(clip), model: 'mocker-model', seed: 5,
  });
  const text = await client.audio.transcriptions.create({
    file: fs.createReadStream(clip), model: 'mocker-model', response_format: 'text', seed: 5,
  });
  const translation = await client.audio.translations.create({
    file: fs.createReadStream(clip), model: 'mocker-model',
  });
  process.stdout.write(JSON.stringify({ transcription, text, translation }));
}

main().catch((e) => { console.error(e); process.exit(1); });
