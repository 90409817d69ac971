// Placeholder counts from @huggingface/transformers (transformers.js), an
// independent implementation of the Hugging Face processors: each case's
// image (a blank RawImage of its size) goes through the real image
// processor and processor, whose expanded prompt is counted. The
// tokenizer is the identity: the count is of placeholder strings.
// Usage: node jsref.mjs <node_modules> < cases.json > counts.json
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const modules = process.argv[2];
const require = createRequire(path.join(modules, 'noop.js'));
const tf = await import(require.resolve('@huggingface/transformers'));
const { RawImage, Qwen2VLImageProcessor, Qwen2_5_VLProcessor, Gemma3ImageProcessor, Gemma3Processor,
  CLIPImageProcessor, LlavaProcessor, PixtralImageProcessor, PixtralProcessor } = tf;
tf.env.allowRemoteModels = false;

const identity = Object.assign((text) => ({ text }), {
  config: { boi_token: '<start_of_image>', image_token: '<image_soft_token>', eoi_token: '<end_of_image>' },
});
const clipMean = [0.48145466, 0.4578275, 0.40821073], clipStd = [0.26862954, 0.26130258, 0.27577711];
const count = (s, t) => s.split(t).length - 1;

function qwen(patch, min_pixels, max_pixels) {
  const ip = new Qwen2VLImageProcessor({ do_resize: true, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true,
    image_mean: clipMean, image_std: clipStd, min_pixels, max_pixels, patch_size: patch, merge_size: 2, temporal_patch_size: 2, resample: 3 });
  const p = new Qwen2_5_VLProcessor({}, { image_processor: ip, tokenizer: identity });
  return async (img) => count((await p('<|vision_start|><|image_pad|><|vision_end|>', img)).text[0], '<|image_pad|>');
}

function gemma3() {
  const ip = new Gemma3ImageProcessor({ do_resize: true, size: { height: 896, width: 896 }, do_rescale: true, rescale_factor: 1 / 255,
    do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5], resample: 2 });
  const p = new Gemma3Processor({ image_seq_length: 256 }, { image_processor: ip, tokenizer: identity });
  // The replacement as text: its pieces are counted as the Go side lays them out.
  return async (img) => {
    const t = (await p('<start_of_image>', img)).text[0];
    return count(t, '\n\n') + count(t, '<start_of_image>') + count(t, '<image_soft_token>') + count(t, '<end_of_image>');
  };
}

function llava() {
  const ip = new CLIPImageProcessor({ do_resize: true, size: { shortest_edge: 336 }, do_center_crop: true, crop_size: { height: 336, width: 336 },
    do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: clipMean, image_std: clipStd, resample: 3 });
  // num_additional_image_tokens is 1 in llava-1.5's processor_config.json; the Python
  // processor subtracts it again for the "default" feature strategy, which
  // transformers.js does not read, so 0 stands for both here.
  const p = new LlavaProcessor({ image_token: '<image>', patch_size: 14, num_additional_image_tokens: 0 }, { image_processor: ip, tokenizer: identity });
  return async (img) => count((await p(img, '<image>')).text[0], '<image>');
}

function pixtral(longest_edge, patch_size, spatial_merge_size) {
  const ip = new PixtralImageProcessor({ do_resize: true, size: { longest_edge }, patch_size, spatial_merge_size, do_rescale: true,
    rescale_factor: 1 / 255, do_normalize: true, image_mean: clipMean, image_std: clipStd, resample: 3 });
  const p = new PixtralProcessor({ image_token: '[IMG]', image_break_token: '[IMG_BREAK]', image_end_token: '[IMG_END]', patch_size, spatial_merge_size },
    { image_processor: ip, tokenizer: identity });
  return async (img) => {
    const t = (await p(img, '[IMG]')).text[0];
    return count(t, '[IMG]') + count(t, '[IMG_BREAK]') + count(t, '[IMG_END]');
  };
}

const families = {
  'Qwen/Qwen2.5-VL-7B-Instruct': (c) => qwen(14, c.min_pixels || 3136, c.max_pixels || 12845056),
  'Qwen/Qwen2-VL-7B-Instruct': () => qwen(14, 3136, 12845056),
  'Qwen/Qwen3-VL-8B-Instruct': () => qwen(16, 65536, 16777216),
  // Qwen2.5-Omni's image processor is Qwen2VLImageProcessor with Qwen2.5-VL's bounds.
  'Qwen/Qwen2.5-Omni-7B': () => qwen(14, 3136, 12845056),
  'google/gemma-3-4b-it': gemma3,
  'llava-hf/llava-1.5-7b-hf': llava,
  'mistral-community/pixtral-12b': () => pixtral(1024, 16, 1),
  'mistralai/Mistral-Small-3.1-24B-Instruct-2503': () => pixtral(1540, 14, 2),
};

const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const c of cases) {
  const make = families[c.model];
  if (!make || c.kind !== 'image') { out.push({ ...c, js: null, skipped: true }); continue; }
  try {
    const n = await (make(c))(new RawImage(new Uint8ClampedArray(c.width * c.height * 3), c.width, c.height, 3));
    out.push({ ...c, js: n });
  } catch (e) {
    out.push({ ...c, js: null, error: String(e.message || e).slice(0, 200) });
  }
}
process.stdout.write(JSON.stringify(out));
