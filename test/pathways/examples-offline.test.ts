import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import fs from 'node:fs';
import { edgesTaken, inboundCall, loadExample as load, node, placeCall, WebhookServer } from './helpers.js';

/** The example files the cases below ran: every file of examples/pathways must be among them. */
const ran = new Set<string>();
const loadExample: typeof load = (t, file, ...rest) => {
  ran.add(file);
  return load(t, file, ...rest);
};

/** The example pathway library run end to end on the sandbox with the offline model (no network but loopback). */
describe('example pathways with the offline model (sandbox personas, clock 100x)', () => {
  let t: TestApp;
  let hook: WebhookServer;
  before(async () => {
    hook = await WebhookServer.start();
    t = await createTestApp({ clock: new ScaledClock(100) });
    await t.services.startWorkers();
  });
  after(async () => {
    await t.close();
    await hook.close();
  });

  it('appointment booking: global detour and back, extraction, webhook, SMS, end', async () => {
    hook.received.length = 0;
    hook.reply = () => ({ status: 200, body: { confirmation: 'BK-1042' } });
    const id = await loadExample(t, 'appointment-booking.json', (g) => {
      node(g, 'book').url = `${hook.url}/bookings`;
    });
    const { call, logs, lines } = await placeCall(t, {
      phone_number: '+14155550140',
      pathway_id: id,
      request_data: { name: 'Dana' },
    });
    assert.equal(call.queue_status, 'complete', lines);
    assert.equal(call.call_ended_by, 'ASSISTANT', lines);
    assert.deepEqual(edgesTaken(logs), ['wants', 'global:hours', 'gave_time', 'send_text']);
    // A "Hello?" heard over the greeting is noted and waited through: nothing else may stay.
    assert.ok(
      logs
        .filter((l) => l.event === 'stayed')
        .every((l) => l.node_id === 'greet' && /^\W*hello\W*$/i.test(String(l.heard))),
      JSON.stringify(logs),
    );
    const steps = logs.filter((l) => l.event !== 'stayed');
    assert.deepEqual(
      steps.map((l) => l.node_id),
      [
        'greet',
        'greet',
        'ask_time',
        'ask_time',
        'hours',
        'ask_time',
        'ask_time',
        'book',
        'confirm',
        'confirm',
        'text_details',
        'bye',
      ],
    );
    assert.deepEqual(
      steps.map((l) => l.event),
      [
        'entered',
        'decided',
        'entered',
        'decided',
        'entered',
        'returned',
        'decided',
        'entered',
        'entered',
        'decided',
        'entered',
        'entered',
      ],
    );
    assert.ok(logs.every((l) => l.pathway_id === id && l.version === 1));
    assert.equal(
      logs[0]!.said,
      'Hi Dana, this is Bright Smile Dental. You are due for a cleaning. Would you like to book an appointment?',
    );
    assert.match(steps[1]!.reason, /words matched the edge label: .*book/);
    assert.equal(steps[1]!.decided_by, 'offline');
    assert.match(String(steps[1]!.heard), /Yes, I would like to book an appointment\./);
    assert.deepEqual(steps[6]!.variables, { appointment_day: 'tuesday', appointment_time: '3 pm' });
    assert.deepEqual(steps[7]!.variables, { confirmation_number: 'BK-1042' });
    assert.equal(logs.at(-1)!.action, 'finish');
    // Extracted and webhook variables are the call's variables too.
    const variables = call.variables as Record<string, unknown>;
    assert.equal(variables.appointment_day, 'tuesday');
    assert.equal(variables.appointment_time, '3 pm');
    assert.equal(variables.confirmation_number, 'BK-1042');
    assert.match(
      lines,
      /assistant: We are open Monday to Friday, 8 am to 5 pm\. What day and time work best for you\?/,
    );
    assert.match(lines, /Your confirmation number is BK-1042/);
    // The webhook got the extracted variables in its body and its headers.
    assert.equal(hook.received.length, 1);
    assert.equal(hook.received[0]!.path, '/bookings');
    assert.equal(hook.received[0]!.headers['x-clinic'], 'bright-smile');
    assert.deepEqual(JSON.parse(hook.received[0]!.body), {
      patient: 'Dana',
      day: 'tuesday',
      time: '3 pm',
      phone: '+14155550140',
    });
    // The SMS went through the carrier: the sandbox logs it on the call.
    const sms = t.services.sandbox.call(String(call.call_id))!.log.filter((e) => e.kind === 'sms');
    assert.deepEqual(
      sms.map((e) => e.text),
      ['to +14155550140: Bright Smile Dental: your cleaning is on tuesday at 3 pm. Confirmation BK-1042.'],
    );
    assert.equal((call.request_data as Record<string, unknown>).model, 'offline');
  });

  it('appointment booking: a failing webhook takes the error edge and transfers to the front desk', async () => {
    hook.received.length = 0;
    hook.reply = () => ({ status: 503, body: { error: 'calendar down' } });
    const id = await loadExample(t, 'appointment-booking.json', (g) => {
      node(g, 'book').url = `${hook.url}/bookings`;
    });
    const { call, logs, lines } = await placeCall(t, {
      phone_number: '+14155550140',
      pathway_id: id,
      request_data: { name: 'Dana' },
    });
    assert.equal(call.transferred_to, '+14155550110', lines);
    const book = logs.find((l) => l.node_id === 'book')!;
    assert.equal(book.chosen_edge?.id, 'booking_failed');
    assert.match(book.reason, /failed: HTTP 503/);
    assert.deepEqual(book.variables, {});
    assert.equal(logs.at(-1)!.node_id, 'front_desk');
    assert.equal(logs.at(-1)!.action, 'transfer');
    assert.match(lines, /Let me transfer you to our front desk/);
  });

  it('lead qualification: booleans, integers and e-mails extracted; a Knowledge Base answer; edges ruled by variables', async () => {
    const id = await loadExample(t, 'lead-qualification.json');
    const { call, logs, lines } = await placeCall(t, { phone_number: '+14155550141', pathway_id: id });
    assert.equal(call.queue_status, 'complete', lines);
    assert.deepEqual(edgesTaken(logs), ['owner', 'global:pricing', 'qualified', 'gave_email']);
    const qualified = logs.find((l) => l.chosen_edge?.id === 'qualified')!;
    assert.equal(qualified.decided_by, 'rule');
    assert.equal(qualified.reason, 'variables: monthly_bill >= 100');
    const variables = call.variables as Record<string, unknown>;
    assert.equal(variables.owns_home, true);
    assert.equal(variables.monthly_bill, 180);
    assert.equal(variables.email, 'jordan@example.com');
    // The KB node answered from its text by word matching, then the call went back to the question.
    assert.match(
      lines,
      /user: How much does it cost\?\nassistant: Sunny Solar panels cost nothing upfront\. About how much is your monthly electric bill/,
    );
    // A prompt-only node, offline: the instruction made into a question.
    assert.match(lines, /assistant: Could you tell me your email address so we can send a quote\?/);
    assert.match(lines, /We will email your quote to jordan@example\.com today\. Goodbye!/);
  });

  it('support triage (inbound number with the pathway): Wait for Response waits, a ticket webhook, transfer', async () => {
    hook.received.length = 0;
    hook.reply = (r) =>
      r.path === '/tickets' ? { status: 201, body: { ticket: { id: 'T-77' } } } : { status: 404, body: {} };
    const id = await loadExample(t, 'support-triage.json', (g) => {
      node(g, 'ticket').url = `${hook.url}/tickets`;
    });
    const { call, logs, lines } = await inboundCall(t, id, '+14155550142');
    assert.equal(call.inbound, true);
    assert.equal(call.transferred_to, '+14155550110', lines);
    assert.deepEqual(edgesTaken(logs), ['to_tech', 'not_yet', 'still_broken']);
    // The long pause was silence at the Wait for Response node: it kept waiting instead of asking again.
    const silence = logs.filter((l) => l.event === 'silence');
    assert.ok(silence.length >= 1, JSON.stringify(logs));
    assert.ok(silence.every((l) => l.node_id === 'restart' && l.action === 'wait' && l.said === null));
    assert.equal((call.variables as Record<string, unknown>).restarted_router, false);
    assert.equal((call.variables as Record<string, unknown>).ticket_id, 'T-77');
    assert.equal(hook.received.length, 1);
    assert.deepEqual(JSON.parse(hook.received[0]!.body), {
      caller: '+14155550142',
      issue: 'no internet connection',
      restarted: false,
    });
    assert.match(lines, /I have opened ticket T-77 for you\. Let me connect you with a technician\./);
    assert.equal(logs.at(-1)!.node_id, 'technician');
  });

  it('support triage: when the ticket cannot be opened, the caller is not told of a ticket, and is still transferred', async () => {
    hook.received.length = 0;
    hook.reply = () => ({ status: 500, body: {} });
    const id = await loadExample(t, 'support-triage.json', (g) => {
      node(g, 'ticket').url = `${hook.url}/tickets`;
    });
    const { call, logs, lines } = await inboundCall(t, id, '+14155550142');
    assert.equal(call.transferred_to, '+14155550110', lines);
    assert.equal(logs.at(-1)!.node_id, 'technician_no_ticket', lines);
    assert.match(lines, /I could not open a ticket just now, but let me connect you with a technician\./);
    assert.doesNotMatch(lines, /opened ticket/);
  });

  it('phone menu: a global node returns to the menu; a condition keeps Wait for Response until the account number', async () => {
    const id = await loadExample(t, 'ivr-menu.json');
    const { call, logs, lines } = await inboundCall(t, id, '+14155550143');
    assert.equal(call.transferred_to, '+14155550110', lines);
    assert.deepEqual(edgesTaken(logs), ['global:hours', 'to_support', 'gave_account']);
    assert.deepEqual(
      logs.filter((l) => l.event === 'returned').map((l) => l.node_id),
      ['menu'],
    );
    assert.equal((call.variables as Record<string, unknown>).account_number, 4417);
    assert.match(lines, /Connecting you to support for account 4417\./);
  });

  it('phone menu: Transfer Pathway continues in the lead qualification pathway at its bill node', async () => {
    const sales = await loadExample(t, 'lead-qualification.json');
    const id = await loadExample(t, 'ivr-menu.json', (g) => {
      node(g, 'sales').transferPathway = sales;
    });
    const { call, logs, lines } = await inboundCall(t, id, '+14155550144');
    assert.equal(call.queue_status, 'complete', lines);
    assert.deepEqual(
      logs.map((l) => `${l.pathway_id === id ? 'menu' : l.pathway_id === sales ? 'sales' : '?'}:${l.node_id}`),
      ['menu:menu', 'menu:menu', 'menu:sales', 'sales:bill', 'sales:bill', 'sales:email', 'sales:email', 'sales:bye'],
    );
    assert.match(logs[2]!.reason, new RegExp(`continues in pathway ${sales} \\(version 1\\) at node bill`));
    const variables = call.variables as Record<string, unknown>;
    assert.equal(variables.monthly_bill, 250);
    assert.equal(variables.email, 'lee@example.com');
    assert.match(lines, /Goodbye!/);
  });

  it('every pathway of examples/pathways was run above, to its end', () => {
    const examples = fs.readdirSync('examples/pathways').filter((f) => f.endsWith('.json'));
    assert.deepEqual(
      examples.filter((f) => !ran.has(f)),
      [],
      'an example pathway without a case here',
    );
  });
});
