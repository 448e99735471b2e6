// clients/dashboard/specform.js: what the Estimate and Plan forms share:
// the model from a pasted Hugging Face config.json (turned into a spec's
// model by the server, POST /v1/specs/from-hf, as `stepcast spec from-hf`
// does), the GPU from the server's hardware profiles, and the training
// options; and the spec those fields make (README, "Estimating a
// configuration").

import { api } from './api.js';
import { whole } from './form.js';

// Llama 3.1 8B's config.json, the fields the model needs: a default to
// start from.
const EXAMPLE_CONFIG = JSON.stringify({
  model_type: 'llama', num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32,
  num_key_value_heads: 8, intermediate_size: 14336, vocab_size: 128256, max_position_embeddings: 131072,
  rope_scaling: { original_max_position_embeddings: 8192, rope_type: 'llama3' }, tie_word_embeddings: false,
}, null, 1);

function configCheck(text) {
  try {
    const doc = JSON.parse(text);
    return doc && typeof doc === 'object' && !Array.isArray(doc) ? null : 'A JSON object: the config.json as it is.';
  } catch (e) {
    return `Not JSON: ${e.message}`;
  }
}

export function modelFields() {
  return {
    legend: 'Model',
    fields: [
      { name: 'hf_config', label: 'Hugging Face config.json', type: 'textarea', rows: 8, required: true,
        value: EXAMPLE_CONFIG, check: configCheck,
        help: 'Paste the model\'s config.json (llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, qwen3_moe, gpt_oss, ' +
          'gpt2, gpt_neox, deepseek_v2, deepseek_v3); the example is Llama 3.1 8B\'s.' },
      { name: 'seq', label: 'Sequence length', unit: 'tokens', min: 1, step: 1, check: whole(1, 1 << 24),
        help: 'Empty: the config\'s pretraining length.' },
    ],
  };
}

export function clusterFields(hardware) {
  return {
    legend: 'GPU',
    fields: [
      { name: 'gpu', label: 'GPU', type: 'select', value: 'h100-sxm',
        options: hardware.map(h => [h.id, `${h.name} (${h.id}, ${h.hbm_gb} GB)`]) },
      { name: 'gpus_per_node', label: 'GPUs per NVLink domain', min: 1, step: 1, check: whole(1, 65536),
        help: 'Empty: the profile\'s (8 on HGX boards, 72 on GB200).' },
      { name: 'gpu_hour_usd', label: 'Price of a GPU-hour', unit: 'USD', min: 0, step: 'any', value: 2.5,
        check: v => (v >= 0 ? null : 'Zero or more.') },
    ],
  };
}

export function optionsFields() {
  return {
    legend: 'Options',
    fields: [
      { name: 'dtype', label: 'Data type', type: 'select', value: 'bf16',
        options: [['bf16', 'bf16'], ['fp16', 'fp16'], ['fp8', 'fp8 (Hopper and later)'], ['fp4', 'fp4 (Blackwell)'],
          ['fp32', 'fp32']] },
      { name: 'train_tokens', label: 'Tokens to train on', unit: 'tokens', min: 1, step: 'any', value: 1e12,
        check: v => (v > 0 ? null : 'More than zero, or empty.'), help: 'For the time to train; empty: none.' },
    ],
  };
}

// The spec's model from the pasted config (the server's reading of it).
export async function modelFromHf(values) {
  const query = values.seq ? [['seq', values.seq]] : [];
  return api('/v1/specs/from-hf', { method: 'POST', body: JSON.parse(values.hf_config), query });
}

// The spec's cluster and options objects from the form's values; `extra`
// options (recompute, zero_stage, ...) added as given.
export function clusterAndOptions(values, extra = {}) {
  const cluster = { gpu: values.gpu };
  if (values.gpus_per_node) cluster.gpus_per_node = values.gpus_per_node;
  if (values.gpu_hour_usd !== null) cluster.gpu_hour_usd = values.gpu_hour_usd;
  const options = { dtype: values.dtype, ...extra };
  if (values.train_tokens) options.train_tokens = values.train_tokens;
  return { cluster, options };
}
