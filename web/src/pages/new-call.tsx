import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { usePathways } from '../queries';
import { api, type Json, type SendCallBody } from '../api';
import { Field, JsonArea, parseJsonField, problemsByField, useTitle } from '../components/ui';

interface Voice {
  id: string;
  name: string;
  description: string;
}

/** Every Send Call field the form shows, as text; empty means "the server's default". */
const EMPTY = {
  phone_number: '',
  task: '',
  pathway_id: '',
  first_sentence: '',
  from: '',
  voice: '',
  model: '',
  language: '',
  temperature: '',
  wait_for_greeting: false,
  block_interruptions: false,
  interruption_threshold: '',
  max_duration: '',
  record: false,
  sandbox_audio: false,
  answered_by_enabled: false,
  voicemail_action: '',
  voicemail_message: '',
  transfer_phone_number: '',
  timezone: '',
  start_time: '',
  webhook: '',
  summary_prompt: '',
  analysis_prompt: '',
  request_data: '',
  metadata: '',
  tools: '',
  dynamic_data: '',
  other: '',
};
type Form = typeof EMPTY;
type TextField = { [K in keyof Form]: Form[K] extends string ? K : never }[keyof Form];
type FlagField = { [K in keyof Form]: Form[K] extends boolean ? K : never }[keyof Form];

/** The fields a refusal's lines are shown under, by the Send Call names the lines start with. */
const FIELD_NAMES = {
  phone_number: ['phone_number'],
  from: ['from'],
  task: ['task'],
  pathway_id: ['pathway_id', 'pathway_version'],
  first_sentence: ['first_sentence'],
  voice: ['voice'],
  model: ['model'],
  language: ['language'],
  temperature: ['temperature'],
  interruption_threshold: ['interruption_threshold'],
  max_duration: ['max_duration'],
  voicemail_action: ['voicemail_action'],
  voicemail_message: ['voicemail_message'],
  transfer_phone_number: ['transfer_phone_number'],
  start_time: ['start_time'],
  timezone: ['timezone'],
  webhook: ['webhook'],
  summary_prompt: ['summary_prompt'],
  analysis_prompt: ['analysis_prompt'],
} satisfies Partial<Record<TextField, string[]>>;

function Group({ title, children }: { title: string; children: ReactNode }) {
  return (
    <fieldset>
      <legend>{title}</legend>
      <div className="grid">{children}</div>
    </fieldset>
  );
}

/** The request body: filled fields only, numbers as numbers, JSON fields parsed, extras merged. */
function toBody(form: Form): SendCallBody {
  const body: Json = {};
  const number = (name: string, text: string) => {
    if (text.trim() === '') return;
    const value = Number(text);
    if (!Number.isFinite(value)) throw new Error(`${name} must be a number`);
    body[name] = value;
  };
  for (const name of [
    'phone_number',
    'task',
    'pathway_id',
    'first_sentence',
    'from',
    'voice',
    'model',
    'language',
    'voicemail_action',
    'voicemail_message',
    'transfer_phone_number',
    'timezone',
    'webhook',
    'summary_prompt',
    'analysis_prompt',
  ] as const)
    if (form[name].trim() !== '') body[name] = form[name].trim();
  if (form.start_time) body.start_time = new Date(form.start_time).toISOString();
  number('temperature', form.temperature);
  number('interruption_threshold', form.interruption_threshold);
  number('max_duration', form.max_duration);
  for (const flag of ['wait_for_greeting', 'block_interruptions', 'record', 'answered_by_enabled'] as const)
    if (form[flag]) body[flag] = true;
  for (const name of ['request_data', 'metadata', 'tools', 'dynamic_data'] as const) {
    const value = parseJsonField(name, form[name]);
    if (value !== undefined) body[name] = value;
  }
  if (form.sandbox_audio) {
    const metadata = body.metadata ?? {};
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
      throw new Error('Metadata must be a JSON object');
    body.metadata = { ...metadata, openline_sandbox_audio: true };
  }
  const other = parseJsonField('Other settings', form.other);
  if (other !== undefined) {
    if (typeof other !== 'object' || other === null || Array.isArray(other))
      throw new Error('Other settings must be a JSON object');
    Object.assign(body, other);
  }
  return body as SendCallBody;
}

/** "New call": every Send Call field, grouped, the defaults shown; places the call and opens it. */
export function NewCallPage() {
  useTitle('New call');
  const navigate = useNavigate();
  const [form, setForm] = useState<Form>(EMPTY);
  const voices = useQuery({ queryKey: ['voices'], queryFn: () => api<{ voices: Voice[] }>('/v1/voices') });
  const pathways = usePathways();
  const send = useMutation({
    mutationFn: async () => api<{ call_id: string }>('/v1/calls', { method: 'POST', body: toBody(form) }),
    onSuccess: (result) => navigate(`/calls/${result.call_id}`),
  });
  const text = (name: TextField) => ({
    value: form[name],
    onChange: (e: { target: { value: string } }) => setForm({ ...form, [name]: e.target.value }),
  });
  const flag = (name: FlagField) => ({
    checked: form[name],
    onChange: (e: { target: { checked: boolean } }) => setForm({ ...form, [name]: e.target.checked }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send.mutate();
  };
  const { byField, other } = problemsByField(send.error, FIELD_NAMES);
  const formRef = useRef<HTMLFormElement>(null);
  // A refused call: the first field it names gets the focus (and comes into view), its problem under it.
  useEffect(() => {
    if (send.error) formRef.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [send.error]);
  const fieldsInError = Object.keys(byField).length;

  return (
    <section>
      <h1>New call</h1>
      <p className="muted">
        Numbers of the sandbox (+1 NPA 555-01XX) answer with simulated people and machines; docs/sandbox.md in the
        repository lists them.
      </p>
      <form onSubmit={submit} className="wide-form" ref={formRef}>
        <Group title="Who and what">
          <Field problems={byField.phone_number} label="Phone number" hint="E.164, e.g. +14155550123">
            <input required {...text('phone_number')} placeholder="+14155550123" />
          </Field>
          <Field problems={byField.from} label="From" hint="One of your numbers; default: the server's">
            <input {...text('from')} />
          </Field>
          <Field problems={byField.task} label="Task" hint="What the agent should do (or choose a pathway)">
            <textarea rows={5} {...text('task')} />
          </Field>
          <Field problems={byField.pathway_id} label="Pathway">
            <select {...text('pathway_id')}>
              <option value="">none: follow the task</option>
              {pathways.data?.pathways.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Field
            problems={byField.first_sentence}
            label="First sentence"
            hint="Said first; default: the agent opens by itself"
          >
            <input {...text('first_sentence')} />
          </Field>
        </Group>
        <Group title="Voice and model">
          <Field problems={byField.voice} label="Voice">
            <select {...text('voice')}>
              <option value="">default</option>
              {voices.data?.voices.map((v) => (
                <option key={v.id} value={v.name}>
                  {v.name}: {v.description}
                </option>
              ))}
            </select>
          </Field>
          <Field problems={byField.model} label="Model">
            <select {...text('model')}>
              <option value="">enhanced (default)</option>
              <option value="base">base</option>
              <option value="turbo">turbo</option>
            </select>
          </Field>
          <Field problems={byField.language} label="Language">
            <input {...text('language')} placeholder="en-US" />
          </Field>
          <Field problems={byField.temperature} label="Temperature">
            <input inputMode="decimal" {...text('temperature')} placeholder="0.7" />
          </Field>
        </Group>
        <Group title="Conversation">
          <label className="check">
            <input type="checkbox" {...flag('wait_for_greeting')} /> Wait for the greeting
          </label>
          <label className="check">
            <input type="checkbox" {...flag('block_interruptions')} /> Block interruptions
          </label>
          <div className="check-group">
            <label className="check">
              <input type="checkbox" aria-describedby="record-hint" {...flag('record')} /> Record the call
            </label>
            <label className="check">
              <input type="checkbox" aria-describedby="record-hint" {...flag('sandbox_audio')} /> Sandbox call in audio
              mode
            </label>
            <small id="record-hint" className="muted">
              Sandbox numbers (555-01XX) are recorded only in audio mode, with real voices and tones.
            </small>
          </div>
          <label className="check">
            <input type="checkbox" {...flag('answered_by_enabled')} /> Detect answering machines
          </label>
          <Field problems={byField.interruption_threshold} label="Interruption threshold (ms)">
            <input inputMode="numeric" {...text('interruption_threshold')} placeholder="100" />
          </Field>
          <Field problems={byField.max_duration} label="Max duration (minutes)">
            <input inputMode="numeric" {...text('max_duration')} placeholder="30" />
          </Field>
          <Field problems={byField.voicemail_action} label="Voicemail action">
            <select {...text('voicemail_action')}>
              <option value="">hangup (default)</option>
              <option value="leave_message">leave_message</option>
              <option value="ignore">ignore</option>
            </select>
          </Field>
          <Field problems={byField.voicemail_message} label="Voicemail message">
            <input {...text('voicemail_message')} />
          </Field>
          <Field problems={byField.transfer_phone_number} label="Transfer phone number">
            <input {...text('transfer_phone_number')} />
          </Field>
        </Group>
        <Group title="Scheduling and results">
          <Field problems={byField.start_time} label="Start time" hint="Empty: now">
            <input type="datetime-local" {...text('start_time')} />
          </Field>
          <Field problems={byField.timezone} label="Time zone">
            <input {...text('timezone')} placeholder="America/Los_Angeles" />
          </Field>
          <Field problems={byField.webhook} label="Webhook URL">
            <input type="url" {...text('webhook')} />
          </Field>
          <Field problems={byField.summary_prompt} label="Summary prompt">
            <input {...text('summary_prompt')} />
          </Field>
          <Field problems={byField.analysis_prompt} label="Analysis prompt">
            <input {...text('analysis_prompt')} />
          </Field>
        </Group>
        <Group title="Data (JSON)">
          <JsonArea label="Request data" rows={4} {...jsonProps(form, setForm, 'request_data')} />
          <JsonArea label="Metadata" rows={4} {...jsonProps(form, setForm, 'metadata')} />
          <JsonArea label="Tools" rows={4} {...jsonProps(form, setForm, 'tools')} />
          <JsonArea label="Dynamic data" rows={4} {...jsonProps(form, setForm, 'dynamic_data')} />
          <JsonArea label="Other settings" rows={4} {...jsonProps(form, setForm, 'other')} />
        </Group>
        {send.error && (fieldsInError > 0 || other.length > 0) && (
          <div role="alert" className="problem">
            <ul>
              {fieldsInError > 0 && (
                <li>
                  {fieldsInError === 1
                    ? 'A field above has a problem: see under it.'
                    : `${fieldsInError} fields above have problems: see under each.`}
                </li>
              )}
              {other.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          </div>
        )}
        <button type="submit" disabled={send.isPending}>
          Place call
        </button>
      </form>
    </section>
  );
}

function jsonProps(form: Form, setForm: (form: Form) => void, name: TextField) {
  return { value: form[name], onChange: (value: string) => setForm({ ...form, [name]: value }) };
}
