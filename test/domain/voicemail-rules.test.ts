import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideVoicemail, type Answerer, type VoicemailDecision } from '../../src/domain/voicemail-rules.js';
import type { VoicemailAction } from '../../src/domain/voicemail-rules.js';

/** voicemail_message as the request may carry it. */
type Message = 'set' | 'unset' | 'blank';
const MESSAGE_VALUE: Record<Message, string | null> = { set: 'Hi, please call us back.', unset: null, blank: '   ' };

interface Row {
  answerer: Answerer;
  message: Message;
  action: VoicemailAction;
  amd: boolean;
  expected: VoicemailDecision;
  /** Which rule of seed 2.1 applies, quoted. */
  why: string;
}

const LEAVE: VoicemailDecision = { action: 'leave_message_and_end', message: MESSAGE_VALUE.set!, rule: 1 };
const END_1: VoicemailDecision = { action: 'end', rule: 1 };
const NAVIGATE: VoicemailDecision = { action: 'continue', navigate: true, rule: 2 };
const IGNORE: VoicemailDecision = { action: 'continue', navigate: false, rule: 2 };
const LEAVE_2: VoicemailDecision = { action: 'leave_message_and_end', message: MESSAGE_VALUE.set!, rule: 2 };
const END_2: VoicemailDecision = { action: 'end', rule: 2 };

const RULE_1_SET =
  'rule 1: "if voicemail_message is set, it is left and the call ends" (rule 3: regardless of voicemail_action)';
const RULE_1_UNSET = 'rule 1: "otherwise the call ends at once (regardless of answered_by_enabled/amd)"';
function rowsFor(answerer: Answerer): Row[] {
  const rows: Row[] = [];
  for (const message of ['set', 'unset', 'blank'] as const) {
    for (const action of ['hangup', 'leave_message', 'ignore'] as const) {
      for (const amd of [true, false]) {
        const row = { answerer, message, action, amd };
        if (answerer === 'voicemail') {
          if (message === 'set') rows.push({ ...row, expected: LEAVE, why: RULE_1_SET });
          else
            rows.push({
              ...row,
              expected: END_1,
              why: `${RULE_1_UNSET}; a blank message is not a message`,
            });
        } else if (amd) {
          rows.push({
            ...row,
            expected: NAVIGATE,
            why: 'rule 2: "if amd is true the agent navigates and continues"; rule 4: "the call is not hung up on IVR systems"',
          });
        } else if (action === 'ignore') {
          rows.push({
            ...row,
            expected: IGNORE,
            why: 'rule 2: "else if voicemail_action is ignore the agent ignores the IVR and continues"; rule 4',
          });
        } else if (message === 'set') {
          rows.push({
            ...row,
            expected: LEAVE_2,
            why: 'rule 2: "else if voicemail_message is set it is left and the call ends"; rule 3: regardless of voicemail_action',
          });
        } else {
          rows.push({ ...row, expected: END_2, why: 'rule 2: "else the call ends immediately"' });
        }
      }
    }
  }
  return rows;
}

function run(rows: Row[]): void {
  for (const r of rows) {
    const name = `${r.answerer}, message ${r.message}, voicemail_action ${r.action}, amd ${r.amd} -> ${r.expected.action} (${r.why})`;
    it(name, () => {
      const decision = decideVoicemail(r.answerer, {
        voicemail_message: MESSAGE_VALUE[r.message],
        voicemail_action: r.action,
        amd: r.amd,
      });
      assert.deepEqual(decision, r.expected);
    });
  }
}

describe('voicemail rules of seed 2.1: a voicemail answered (rule 1, with rule 3)', () => {
  const rows = rowsFor('voicemail');
  it('covers every combination of message x action x amd', () => assert.equal(rows.length, 18));
  run(rows);
});

describe('voicemail rules of seed 2.1: an IVR answered (rule 2, with rules 3 and 4)', () => {
  const rows = rowsFor('ivr');
  it('covers every combination of message x action x amd', () => assert.equal(rows.length, 18));
  run(rows);
});

describe('voicemail rules: rule 3 and rule 4 as properties over every combination', () => {
  const all = [...rowsFor('voicemail'), ...rowsFor('ivr')];

  it('rule 3: a voicemail with a set message leaves exactly that message, whatever voicemail_action says', () => {
    for (const r of all.filter((x) => x.answerer === 'voicemail' && x.message === 'set')) {
      const d = decideVoicemail('voicemail', {
        voicemail_message: MESSAGE_VALUE.set,
        voicemail_action: r.action,
        amd: r.amd,
      });
      assert.equal(d.action, 'leave_message_and_end');
      assert.equal(d.action === 'leave_message_and_end' ? d.message : undefined, MESSAGE_VALUE.set);
    }
  });

  it('rule 4: with amd or ignore an IVR is never hung up on, and a voicemail message is still left', () => {
    for (const r of all.filter((x) => x.amd || x.action === 'ignore')) {
      const d = decideVoicemail(r.answerer, {
        voicemail_message: MESSAGE_VALUE[r.message],
        voicemail_action: r.action,
        amd: r.amd,
      });
      if (r.answerer === 'ivr') assert.equal(d.action, 'continue', `${r.message}/${r.action}/${r.amd}`);
      else if (r.message === 'set') assert.equal(d.action, 'leave_message_and_end');
    }
  });

  it('the decision quotes rule 1 for voicemails and rule 2 for IVRs', () => {
    for (const r of all) {
      const d = decideVoicemail(r.answerer, {
        voicemail_message: MESSAGE_VALUE[r.message],
        voicemail_action: r.action,
        amd: r.amd,
      });
      assert.equal(d.rule, r.answerer === 'voicemail' ? 1 : 2);
    }
  });
});
