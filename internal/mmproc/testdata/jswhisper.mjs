// Whisper's input frames per window from @huggingface/transformers'
// WhisperFeatureExtractor (an independent implementation of the Hugging
// Face feature extractor): each clip of silence goes through it and the
// frame count of its log-mel features is printed.
// Usage: node jswhisper.mjs <node_modules> <feature_size> <seconds>...
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, mels, ...secs] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'noop.js'));
const tf = await import(require.resolve('@huggingface/transformers'));
tf.env.allowRemoteModels = false;
const fe = new tf.WhisperFeatureExtractor({ feature_size: Number(mels), sampling_rate: 16000, hop_length: 160,
  chunk_length: 30, n_fft: 400, n_samples: 480000, nb_max_frames: 3000, padding_value: 0.0 });
const out = [];
for (const s of secs) {
  const { input_features } = await fe(new Float32Array(Math.round(Number(s) * 16000)));
  out.push({ seconds: Number(s), dims: input_features.dims });
}
process.stdout.write(JSON.stringify(out));
