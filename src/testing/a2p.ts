/** A complete, valid A2P 10DLC brand registration body (seed 2.9), for tests. */
export const A2P_REGISTRATION = {
  businessName: 'Acme Plumbing LLC',
  ein: '12-3456789',
  vertical: 'CONSTRUCTION',
  address: '1 Market St',
  city: 'San Francisco',
  state: 'CA',
  postalCode: '94105',
  country: 'US',
  email: 'ops@acme.example',
  type: 'Limited Liability Corporation',
  website: 'https://acme.example',
  opt_in_info: 'Customers opt in on the booking form by ticking a box.',
  messageSamples: ['Your plumber arrives at 3pm.', 'Reply STOP to opt out.', 'Your invoice is ready.'],
  trusted_user: {
    position: 'CEO',
    first_name: 'Ada',
    last_name: 'Lovelace',
    phone_number: '+14155550100',
    email: 'ada@acme.example',
  },
};
